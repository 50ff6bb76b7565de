// The Kubernetes manifests in images/k8s: they parse, their probes and ports agree
// with the configuration defaults, their configuration passes the daemon's own
// validation, the security context bubblewrap needs is there with a comment
// saying why, and the seccomp profile allows what bwrap needs and nothing of the
// classic escape surface.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isMap, isPair, isScalar, parseAllDocuments, type Document } from 'yaml';
import { configSchema, envName, loadConfig } from '../src/config.js';
import { ROUTE_KEY_HEADER } from '../src/client/index.js';
import { projectDir } from './helpers/daemon.js';

const dir = join(projectDir, 'images', 'k8s');

interface K8s {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  data?: Record<string, string>;
}

function load(): { file: string; doc: Document; obj: K8s }[] {
  const out: { file: string; doc: Document; obj: K8s }[] = [];
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()) {
    for (const doc of parseAllDocuments(readFileSync(join(dir, file), 'utf8'))) {
      assert.deepEqual(doc.errors, [], `${file} does not parse`);
      if (doc.contents === null) continue;
      out.push({ file, doc: doc as Document, obj: doc.toJS() as K8s });
    }
  }
  return out;
}

const docs = load();
const one = (kind: string) => {
  const found = docs.filter((d) => d.obj.kind === kind);
  assert.equal(found.length, 1, `one ${kind}`);
  return found[0]!;
};

/** The comment written above the key at `path` (yaml keeps it on the key node). */
function commentAbove(doc: Document, path: (string | number)[]): string {
  let node: unknown = doc.contents;
  let comment = '';
  for (const key of path) {
    if (typeof key === 'number') {
      node = (node as { items: unknown[] }).items[key];
      continue;
    }
    assert.ok(isMap(node), `no map at ${path.join('.')}`);
    const pair = node.items.find((p) => isPair(p) && isScalar(p.key) && p.key.value === key);
    assert.ok(pair, `no key ${key} in ${path.join('.')}`);
    comment = (isScalar(pair.key) ? pair.key.commentBefore : undefined) ?? '';
    // yaml keeps the comment above a map's first key on the map itself.
    if (!comment && node.items[0] === pair) comment = node.commentBefore ?? '';
    node = pair.value;
  }
  return comment;
}

const defaultPort = Number(String(configSchema.shape.listen.parse(undefined)).split(':').pop());

describe('Kubernetes manifests', () => {
  it('parse, and hold a workload, a Service and a PodDisruptionBudget', () => {
    for (const { file, obj } of docs) {
      assert.ok(obj.apiVersion && obj.kind && obj.metadata?.name, `${file}: apiVersion, kind, metadata.name`);
    }
    assert.ok(docs.some((d) => d.obj.kind === 'StatefulSet' || d.obj.kind === 'Deployment'));
    assert.ok(docs.some((d) => d.obj.kind === 'Service'));
    one('PodDisruptionBudget');
  });

  it('probe /livez and /readyz on the configured port', () => {
    assert.equal(defaultPort, 7420);
    const cfg = one('ConfigMap').obj.data!;
    assert.equal(Number(cfg.LSPD_LISTEN!.split(':').pop()), defaultPort, 'LSPD_LISTEN port');
    const pod = one('StatefulSet').obj.spec.template.spec;
    const c = pod.containers[0];
    const ports = new Map<string, number>(c.ports.map((p: { name: string; containerPort: number }) => [p.name, p.containerPort]));
    const portOf = (p: string | number) => (typeof p === 'number' ? p : ports.get(p));
    assert.equal(c.livenessProbe.httpGet.path, '/livez');
    assert.equal(c.readinessProbe.httpGet.path, '/readyz');
    assert.equal(portOf(c.livenessProbe.httpGet.port), defaultPort);
    assert.equal(portOf(c.readinessProbe.httpGet.port), defaultPort);
    if (c.startupProbe) assert.equal(portOf(c.startupProbe.httpGet.port), defaultPort);
    for (const svc of docs.filter((d) => d.obj.kind === 'Service')) {
      for (const p of svc.obj.spec.ports) assert.equal(portOf(p.targetPort), defaultPort, `${svc.obj.metadata.name} targetPort`);
    }
    assert.ok(c.resources?.requests?.memory && c.resources?.limits?.memory, 'resources');
  });

  it('configure lspd through env that the daemon itself accepts', () => {
    const cfgMap = one('ConfigMap').obj;
    const known = new Set(Object.keys(configSchema.shape).map(envName));
    for (const k of Object.keys(cfgMap.data!)) assert.ok(known.has(k), `${k} is not a setting of src/config.ts`);
    const cfg = loadConfig(cfgMap.data as NodeJS.ProcessEnv, '/');
    const ss = one('StatefulSet').obj;
    const c = ss.spec.template.spec.containers[0];
    assert.ok(
      c.envFrom.some((e: { configMapRef?: { name: string } }) => e.configMapRef?.name === cfgMap.metadata.name),
      'envFrom the ConfigMap',
    );
    const mounts = new Map<string, string>(c.volumeMounts.map((m: { name: string; mountPath: string }) => [m.name, m.mountPath]));
    assert.equal(cfg.dataDir, mounts.get('data'), 'the data volume is LSPD_DATA');
    assert.ok(ss.spec.volumeClaimTemplates.some((v: { metadata: { name: string } }) => v.metadata.name === 'data'));
    assert.ok(cfg.tokensFile?.startsWith(mounts.get('tokens')! + '/'), 'LSPD_TOKENS is in the tokens mount');
    // A user-namespaced pod maps uids 0-65535 only: the jail uid pool must fit.
    assert.ok(cfg.jailUidBase + cfg.jailUidCount <= 65536, 'uid pool inside the pod user namespace');
    // SIGTERM drains and shuts servers down before Kubernetes kills the pod.
    assert.ok(ss.spec.template.spec.terminationGracePeriodSeconds * 1000 > cfg.shutdownGraceMs + cfg.shutdownTimeoutMs);
    // Selectors match the pod labels.
    const labels = ss.spec.template.metadata.labels;
    for (const d of docs.filter((x) => ['Service', 'PodDisruptionBudget', 'StatefulSet'].includes(x.obj.kind))) {
      const sel = d.obj.spec.selector.matchLabels ?? d.obj.spec.selector;
      for (const [k, v] of Object.entries(sel)) assert.equal(labels[k], v, `${d.obj.kind} ${d.obj.metadata.name} selector ${k}`);
    }
  });

  it('give bubblewrap what it needs, each setting with a comment saying why', () => {
    const { doc, obj } = one('StatefulSet');
    const pod = obj.spec.template.spec;
    const sc = pod.containers[0].securityContext;
    assert.equal(pod.hostUsers, false);
    assert.equal(sc.procMount, 'Unmasked');
    assert.equal(sc.seccompProfile.type, 'Localhost');
    assert.equal(sc.seccompProfile.localhostProfile.split('/').pop(), 'seccomp-lspd.json');
    assert.ok(sc.appArmorProfile?.type, 'AppArmor is stated');
    assert.equal(sc.allowPrivilegeEscalation, false);
    assert.equal(sc.privileged, false);
    assert.deepEqual(sc.capabilities.drop, ['ALL']);
    assert.ok(!sc.capabilities.add.includes('SYS_ADMIN'), 'no CAP_SYS_ADMIN');
    const base = ['spec', 'template', 'spec'];
    const scPath = [...base, 'containers', 0, 'securityContext'];
    for (const path of [
      [...base, 'hostUsers'],
      [...scPath, 'runAsUser'],
      [...scPath, 'allowPrivilegeEscalation'],
      [...scPath, 'capabilities', 'add'],
      [...scPath, 'procMount'],
      [...scPath, 'seccompProfile'],
      [...scPath, 'appArmorProfile'],
      [...base, 'containers', 0, 'livenessProbe'],
      [...base, 'containers', 0, 'readinessProbe'],
      [...base, 'containers', 0, 'resources'],
    ]) {
      assert.ok(commentAbove(doc, path).trim().length > 20, `${path.join('.')} has no comment saying why`);
    }
  });

  it('route by (org, repo) on the header the client sends', () => {
    const ing = one('Ingress').obj;
    const hashBy = ing.metadata.annotations?.['nginx.ingress.kubernetes.io/upstream-hash-by'];
    assert.equal(hashBy, `$http_${ROUTE_KEY_HEADER.replace(/-/g, '_')}`);
  });

  it('ship a seccomp profile that denies by default and allows what bwrap needs, nothing of the escape surface', () => {
    const p = JSON.parse(readFileSync(join(dir, 'seccomp-lspd.json'), 'utf8')) as {
      defaultAction: string;
      defaultErrnoRet?: number;
      architectures: string[];
      syscalls: { names: string[]; action: string }[];
    };
    assert.equal(p.defaultAction, 'SCMP_ACT_ERRNO');
    assert.ok(p.architectures.includes('SCMP_ARCH_X86_64'));
    // Only the native ABIs: 32-bit compat syscalls fall to the default (denied).
    assert.ok(!p.architectures.includes('SCMP_ARCH_X86') && !p.architectures.includes('SCMP_ARCH_X32'));
    for (const s of p.syscalls) assert.equal(s.action, 'SCMP_ACT_ALLOW');
    const allowed = p.syscalls.flatMap((s) => s.names);
    assert.equal(new Set(allowed).size, allowed.length, 'no duplicates');
    for (const need of [
      'clone',
      'clone3',
      'unshare',
      'mount',
      'umount2',
      'pivot_root',
      'sethostname',
      'seccomp',
      'prctl',
      'capset',
      'setuid',
      'setgid',
      'execve',
      'wait4',
      'socketpair',
    ]) {
      assert.ok(allowed.includes(need), `bwrap/lspd need ${need}`);
    }
    for (const deny of [
      'io_uring_setup',
      'io_uring_enter',
      'io_uring_register',
      'bpf',
      'ptrace',
      'process_vm_readv',
      'process_vm_writev',
      'kexec_load',
      'kexec_file_load',
      'init_module',
      'finit_module',
      'delete_module',
      'open_by_handle_at',
      'name_to_handle_at',
      'keyctl',
      'add_key',
      'request_key',
      'perf_event_open',
      'userfaultfd',
      'reboot',
      'swapon',
      'swapoff',
      'acct',
      'mount_setattr',
      'move_mount',
      'open_tree',
      'fsopen',
      'fsmount',
      'setns',
      'mknod',
      'mknodat',
      'quotactl',
      'lookup_dcookie',
    ]) {
      assert.ok(!allowed.includes(deny), `${deny} must not be allowed`);
    }
  });
});
