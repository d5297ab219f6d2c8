// `npm run cluster`: a real Kubernetes control plane on 127.0.0.1 with a VolumeScope agent as
// node `agent-0`. Run through scripts/cluster/start.mjs (the pinned Node, and as root a private
// mount namespace, so no mount can leak into the host). State lives under .volumescope/cluster/
// and is reused by the next start. `--help` documents the flags and the printed lines.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { findLeftoverMounts, unmountLeftovers } from '../demo/mount-check.ts';
import { ManagedProcess, assertPortFree, childEnv, freePort, httpStatus, isStartError, waitUntil } from '../demo/process.ts';
import { ensureUpstreamBuild } from './build.ts';
import { ensurePki, kubeconfig, type ClientIdentity, type Pki } from './pki.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const HOST = '127.0.0.1';
const NODE = 'agent-0';

/**
 * The CSI driver the cluster runs. The upstream csi-driver-host-path cannot be built here (the
 * module proxy refuses it, see upstream/README.md), so the project's own CSI test driver stands
 * in: csi-loop implements the controller publish/unpublish the attacher drives and serves the
 * kubelet plugin registration itself (in place of node-driver-registrar).
 */
const DRIVER = 'csi-loop.volumescope.dev';

const HELP = `npm run cluster -- [flags]

Starts, all on ${HOST} with state under .volumescope/cluster/ (reused by the next start):
  etcd, kube-apiserver (own CA and serving certificate, service-account keys, --authorization-mode=Node,RBAC,
  NodeRestriction), kube-controller-manager (attachdetach, persistentvolume-binder, persistentvolume-expander,
  serviceaccount, root-ca-cert-publisher, pv-protection, pvc-protection), the CSI driver ${DRIVER} with
  external-attacher, external-provisioner and external-resizer, the StorageClass csi-hostpath (default class,
  allowVolumeExpansion), and node ${NODE}: a VolumeScope agent in managed mode (controller attach/detach on, --register-node)
  with the identity system:node:${NODE} (group system:nodes), its API on a free port.

The upstream binaries come from \`npm run cluster:build\` (built first if missing; needs Go).

Printed once the API server is ready and the node was waited for:
  kubeconfig: <absolute path of the admin kubeconfig>
  ${NODE}: <root dir of the node>
  ${NODE} api: <url> token-file <path>
Logs: .volumescope/cluster/logs/<component>.log. Ctrl-C stops the agent first, unmounts what it left
below the state dir, then the CSI processes, the controller manager, the API server and etcd.

Flags:
  --reset              delete the state dir first (a fresh cluster)
  --node-timeout <s>   how long to wait for node ${NODE} to become Ready (default 60)
  --help               print this help
`;

interface ClusterState {
  /** The upstream build key the state was made with. */
  key: string;
  ports: { etcd: number; etcdPeer: number; apiserver: number; agent: number };
}

const say = (line: string): void => {
  console.log(`cluster: ${line}`);
};

/** The identities of the cluster's clients: CN = user, O = groups. */
const ADMIN: ClientIdentity = { file: 'admin', user: 'kubernetes-admin', groups: ['system:masters'] };
const CONTROLLER_MANAGER: ClientIdentity = { file: 'controller-manager', user: 'system:kube-controller-manager', groups: [] };
const AGENT: ClientIdentity = { file: NODE, user: `system:node:${NODE}`, groups: ['system:nodes'] };
/** The sidecars run as cluster admins here: their upstream RBAC manifests are not part of the modules. */
const SIDECARS: ClientIdentity = { file: 'csi-sidecars', user: 'volumescope:csi-sidecars', groups: ['system:masters'] };

interface ApiResponse {
  status: number;
  body: string;
}

function apiGet(pki: Pki, port: number, path: string): Promise<ApiResponse> {
  return new Promise((resolvePromise, reject) => {
    const req = request(
      { host: HOST, port, path, method: 'GET', ca: readFileSync(pki.caCert), cert: readFileSync(pki.clientCert(ADMIN)), key: readFileSync(pki.clientKey(ADMIN)), timeout: 3000 },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => {
          resolvePromise({ status: res.statusCode ?? 0, body });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`GET ${path}: no answer within 3 s`)));
    req.on('error', reject);
    req.end();
  });
}

/** Chooses the ports: the saved ones while free, otherwise new ones (and says which changed). */
async function choosePorts(saved: ClusterState['ports'] | undefined): Promise<ClusterState['ports']> {
  const pick = async (name: keyof ClusterState['ports']): Promise<number> => {
    const want = saved?.[name];
    if (want !== undefined) {
      try {
        await assertPortFree(HOST, want, name);
        return want;
      } catch (err) {
        say(`${isStartError(err) ? err.message : String(err)}: using another port for ${name}`);
      }
    }
    return freePort(HOST);
  };
  return { etcd: await pick('etcd'), etcdPeer: await pick('etcdPeer'), apiserver: await pick('apiserver'), agent: await pick('agent') };
}

function manifests(): string {
  return `apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata:
  name: ${DRIVER}
spec:
  attachRequired: true
  podInfoOnMount: false
  volumeLifecycleModes: [Persistent]
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: csi-hostpath
  annotations:
    storageclass.kubernetes.io/is-default-class: "true"
provisioner: ${DRIVER}
allowVolumeExpansion: true
reclaimPolicy: Delete
volumeBindingMode: Immediate
`;
}

async function main(): Promise<number> {
  const { values } = parseArgs({ options: { reset: { type: 'boolean' }, help: { type: 'boolean' }, 'node-timeout': { type: 'string' } }, strict: true });
  if (values.help === true) {
    process.stdout.write(HELP);
    return 0;
  }
  const nodeTimeoutS = Number(values['node-timeout'] ?? '60');
  if (!Number.isFinite(nodeTimeoutS) || nodeTimeoutS <= 0) {
    console.error(`cluster: --node-timeout ${String(values['node-timeout'])}: not a positive number of seconds`);
    return 2;
  }
  const { dir: buildDir, manifest } = await ensureUpstreamBuild();
  const bin = (name: string): string => join(buildDir, 'bin', name);
  say(`upstream build ${manifest.key}: ${manifest.binaries.map((b) => `${b.binary} ${b.version}`).join(', ')}`);

  const state = resolve(root, '.volumescope', 'cluster');
  const stateFile = join(state, 'state.json');
  if (values.reset === true && existsSync(state)) {
    const mounted = await findLeftoverMounts(state, []);
    if (mounted.length > 0) {
      console.error(`cluster: --reset: ${mounted.length} mount(s) below ${state} (e.g. ${mounted[0]?.mountPoint ?? ''}); is another cluster running?`);
      return 1;
    }
    rmSync(state, { recursive: true, force: true });
    say(`--reset: removed ${state}`);
  }
  let saved: ClusterState | undefined;
  if (existsSync(stateFile)) {
    saved = JSON.parse(readFileSync(stateFile, 'utf8')) as ClusterState;
    if (saved.key !== manifest.key) {
      console.error(
        `cluster: ${state} was made with upstream build ${saved.key}, this is ${manifest.key} (other pins, build flags or Go toolchain): ` +
          'its etcd data and certificates are not reused across versions. Run `npm run cluster -- --reset` for a fresh cluster.',
      );
      return 1;
    }
    say(`reusing ${state}`);
  }
  const ports = await choosePorts(saved?.ports);
  mkdirSync(state, { recursive: true });
  writeFileSync(stateFile, `${JSON.stringify({ key: manifest.key, ports } satisfies ClusterState, null, 2)}\n`);

  const pki = ensurePki(join(state, 'pki'), [ADMIN, CONTROLLER_MANAGER, AGENT, SIDECARS]);
  const server = `https://${HOST}:${ports.apiserver}`;
  const kubeconfigOf = (id: ClientIdentity): string => {
    const file = join(state, `${id.file}.kubeconfig`);
    writeFileSync(file, kubeconfig(pki, server, id), { mode: 0o600 });
    return file;
  };
  const adminKubeconfig = kubeconfigOf(ADMIN);
  const logs = join(state, 'logs');
  const env = childEnv();
  const started: ManagedProcess[] = [];
  const startGo = (name: string, binary: string, args: readonly string[]): ManagedProcess => {
    const p = ManagedProcess.start({ name, command: bin(binary), args, cwd: state, env, logFile: join(logs, `${name}.log`) });
    started.push(p);
    return p;
  };

  let stopping: Promise<void> | null = null;
  const stopAll = (): Promise<void> =>
    (stopping ??= (async () => {
      say('stopping…');
      const byName = (n: string): ManagedProcess | undefined => started.find((p) => p.name === n);
      await byName(`agent ${NODE}`)?.stop(15_000);
      const leftovers = await findLeftoverMounts(state, [join(state, 'nodes', NODE)]);
      if (leftovers.length > 0) {
        say(`unmounting ${leftovers.length} mount(s) the agent left below ${state}…`);
        const report = await unmountLeftovers(leftovers);
        for (const f of report.failed) say(`could not unmount ${f.mountPoint}: ${f.error}`);
      }
      for (const n of ['csi-attacher', 'csi-provisioner', 'csi-resizer', 'csi-driver', 'kube-controller-manager', 'kube-apiserver', 'etcd']) {
        await byName(n)?.stop(10_000);
      }
      say('stopped');
    })());
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => {
      void stopAll().then(() => process.exit(0));
    });
  }

  try {
    const etcdUrl = `http://${HOST}:${ports.etcd}`;
    const peerUrl = `http://${HOST}:${ports.etcdPeer}`;
    const etcd = startGo('etcd', 'etcd', [
      '--name=default',
      `--data-dir=${join(state, 'etcd')}`,
      `--listen-client-urls=${etcdUrl}`,
      `--advertise-client-urls=${etcdUrl}`,
      `--listen-peer-urls=${peerUrl}`,
      `--initial-advertise-peer-urls=${peerUrl}`,
      `--initial-cluster=default=${peerUrl}`,
    ]);
    await waitUntil('etcd /health', async () => (await httpStatus(`${etcdUrl}/health`)) === 200, { deadlineMs: 60_000, process: etcd, intervalMs: 250 });
    say(`etcd ready at ${etcdUrl}`);

    const apiserver = startGo('kube-apiserver', 'kube-apiserver', [
      `--etcd-servers=${etcdUrl}`,
      `--bind-address=${HOST}`,
      `--advertise-address=${HOST}`,
      `--secure-port=${ports.apiserver}`,
      `--tls-cert-file=${pki.serverCert}`,
      `--tls-private-key-file=${pki.serverKey}`,
      `--client-ca-file=${pki.caCert}`,
      '--service-cluster-ip-range=10.0.0.0/24',
      '--endpoint-reconciler-type=none',
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-key-file=${pki.serviceAccountPub}`,
      `--service-account-signing-key-file=${pki.serviceAccountKey}`,
      '--authorization-mode=Node,RBAC',
      '--enable-admission-plugins=NodeRestriction',
      '--allow-privileged=true',
      '--profiling=false',
    ]);
    await waitUntil('kube-apiserver /readyz', async () => (await apiGet(pki, ports.apiserver, '/readyz')).status === 200, { deadlineMs: 120_000, process: apiserver, intervalMs: 500 });
    say(`kube-apiserver ready at ${server}`);

    const applied = spawnSync(bin('kubectl'), ['--kubeconfig', adminKubeconfig, 'apply', '-f', '-'], { input: manifests(), encoding: 'utf8' });
    if (applied.status !== 0) throw new Error(`kubectl apply of the CSIDriver and StorageClass failed: ${applied.stderr.trim()}`);
    for (const line of applied.stdout.trim().split('\n')) say(`kubectl: ${line}`);

    startGo('kube-controller-manager', 'kube-controller-manager', [
      `--kubeconfig=${kubeconfigOf(CONTROLLER_MANAGER)}`,
      '--controllers=attachdetach,persistentvolume-binder,persistentvolume-expander,serviceaccount,root-ca-cert-publisher,pv-protection,pvc-protection',
      '--leader-elect=false',
      '--secure-port=0',
      `--root-ca-file=${pki.caCert}`,
      `--service-account-private-key-file=${pki.serviceAccountKey}`,
      '--use-service-account-credentials=true',
    ]);

    const nodeRoot = join(state, 'nodes', NODE);
    const csiDir = join(state, 'csi');
    const csiSocket = join(csiDir, 'csi.sock');
    mkdirSync(join(nodeRoot, 'plugins_registry'), { recursive: true });
    mkdirSync(csiDir, { recursive: true });
    const driver = ManagedProcess.start({
      name: 'csi-driver',
      args: ['--import', 'tsx', join(root, 'drivers', 'csi-loop', 'main.ts'), `--endpoint=unix://${csiSocket}`, `--state-dir=${join(csiDir, 'state')}`, `--driver-name=${DRIVER}`, `--node-id=${NODE}`, `--registration-dir=${join(nodeRoot, 'plugins_registry')}`],
      cwd: root,
      env,
      logFile: join(logs, 'csi-driver.log'),
    });
    started.push(driver);
    await waitUntil('the CSI driver socket', () => Promise.resolve(existsSync(csiSocket)), { deadlineMs: 60_000, process: driver, intervalMs: 250 });
    const sidecars = kubeconfigOf(SIDECARS);
    for (const sidecar of ['csi-attacher', 'csi-provisioner', 'csi-resizer']) {
      startGo(sidecar, sidecar, [`--csi-address=${csiSocket}`, `--kubeconfig=${sidecars}`, '--leader-election=false', '--timeout=15s']);
    }

    const tokenFile = join(nodeRoot, 'agent-token');
    const agent = ManagedProcess.start({
      name: `agent ${NODE}`,
      args: [
        '--max-semi-space-size=8',
        '--import',
        'tsx',
        join(root, 'agent', 'main.ts'),
        '--mode=managed',
        `--kubeconfig=${kubeconfigOf(AGENT)}`,
        `--node-name=${NODE}`,
        `--root-dir=${nodeRoot}`,
        `--listen=${HOST}:${ports.agent}`,
        `--token-file=${tokenFile}`,
        '--controller-attach-detach=true',
        '--register-node=true',
      ],
      cwd: root,
      env,
      logFile: join(logs, `agent-${NODE}.log`),
    });
    started.push(agent);
    const agentUrl = `http://${HOST}:${ports.agent}`;
    await waitUntil(`agent ${NODE} /healthz`, async () => (await httpStatus(`${agentUrl}/healthz`)) === 200, { deadlineMs: 90_000, process: agent, intervalMs: 250 });

    let lastNode = '';
    try {
      await waitUntil(
        `node ${NODE} Ready`,
        async () => {
          const r = await apiGet(pki, ports.apiserver, `/api/v1/nodes/${NODE}`);
          if (r.status !== 200) {
            lastNode = `GET /api/v1/nodes/${NODE}: ${r.status} ${(JSON.parse(r.body) as { message?: string }).message ?? r.body}`;
            return false;
          }
          const node = JSON.parse(r.body) as { status?: { conditions?: { type: string; status: string; reason?: string }[] } };
          const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
          lastNode = ready === undefined ? `node ${NODE} exists but has no Ready condition` : `Ready=${ready.status} (${ready.reason ?? ''})`;
          return ready?.status === 'True';
        },
        { deadlineMs: nodeTimeoutS * 1000, process: agent, intervalMs: 1000 },
      );
    } catch (err) {
      if (!isStartError(err) || agent.exitInfo !== null) throw err;
      say(`node ${NODE} is not Ready after ${nodeTimeoutS} s: ${lastNode}`);
    }
    for (const p of started) {
      if (p.exitInfo !== null) say(`${p.name} exited (${p.exitInfo.signal ?? `code ${String(p.exitInfo.code)}`}); log ${p.options.logFile}:\n${await p.logTail(1500)}`);
    }
    console.log(`kubeconfig: ${adminKubeconfig}`);
    console.log(`${NODE}: ${nodeRoot}`);
    console.log(`${NODE} api: ${agentUrl} token-file ${tokenFile}`);
    await new Promise<never>(() => {});
    return 0;
  } catch (err) {
    console.error(`cluster: ${err instanceof Error ? err.message : String(err)}`);
    await stopAll();
    return 1;
  }
}

process.exit(await main());
