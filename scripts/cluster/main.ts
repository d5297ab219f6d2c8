// `npm run cluster`: a real Kubernetes control plane on 127.0.0.1 with a VolumeScope agent as
// node `agent-0` and the upstream kubelet as node `kubelet-0`. Run through scripts/cluster/start.mjs (the pinned Node, and as root a private
// mount namespace, so no mount can leak into the host). State lives under .volumescope/cluster/
// and is reused by the next start. `--help` documents the flags and the printed lines. The
// cluster itself is scripts/cluster/cluster.ts (also used by `npm run test:cluster`).
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { DRIVER, HOST, KUBELET_NODE, NODE, startCluster, stateDirFor, type RunningCluster } from './cluster.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

const HELP = `npm run cluster -- [flags]

Starts, all on ${HOST} with state under .volumescope/cluster/ (reused by the next start):
  etcd, kube-apiserver (own CA and serving certificate, service-account keys, --authorization-mode=Node,RBAC,
  NodeRestriction), kube-controller-manager (attachdetach, persistentvolume-binder, persistentvolume-expander,
  serviceaccount, root-ca-cert-publisher, pv-protection, pvc-protection), the CSI driver ${DRIVER} with
  external-attacher, external-provisioner and external-resizer, the StorageClass csi-hostpath (default class,
  allowVolumeExpansion), node ${NODE}: a VolumeScope agent in managed mode (controller attach/detach on, --register-node)
  with the identity system:node:${NODE} (group system:nodes), its API on a free port, and node ${KUBELET_NODE}:
  the upstream kubelet without a container runtime (\`kube kubelet\`: fake CRI, real mounts and volume plugins,
  controller attach/detach) with the identity system:node:${KUBELET_NODE}, root dir nodes/${KUBELET_NODE}/, and a
  second ${DRIVER} process as its CSI node plugin (node id ${KUBELET_NODE}, state csi/${KUBELET_NODE}/).

The upstream binaries come from \`npm run cluster:build\` (built first if missing; needs Go).

Printed once the API server is ready and both nodes were waited for (a node not Ready in time is
reported on a cluster: line before these):
  kubeconfig: <absolute path of the admin kubeconfig>
  ${NODE}: <root dir of the node>
  ${NODE} api: <url> token-file <path>
  ${KUBELET_NODE}: <root dir of the kubelet>
Logs: .volumescope/cluster/logs/<component>.log (the kubelet: kubelet-${KUBELET_NODE}.log, its CSI node plugin:
csi-driver-${KUBELET_NODE}.log). Ctrl-C stops the agent and the kubelet first, unmounts what they left below
the state dir, then the CSI processes, the controller manager, the API server and etcd.

Flags:
  --reset              delete the state dir first (a fresh cluster)
  --node-timeout <s>   how long to wait for nodes ${NODE} and ${KUBELET_NODE} to become Ready (default 60)
  --help               print this help
`;

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
  // Installed before the start: a Ctrl-C while it runs stops what has started, in order.
  let stop: (() => Promise<void>) | null = null;
  let stopRequested = false;
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => {
      stopRequested = true;
      if (stop === null) process.exit(1);
      void stop().then(() => process.exit(0));
    });
  }
  const stateDir = stateDirFor(resolve(root, '.volumescope', 'cluster'), 'cluster');
  if (stateDir.note !== undefined) console.log(`cluster: ${stateDir.note}`);
  let cluster: RunningCluster;
  try {
    cluster = await startCluster({
      stateDir: stateDir.dir,
      reset: values.reset === true,
      nodeTimeoutMs: nodeTimeoutS * 1000,
      onStoppable: (s) => {
        stop = s;
      },
    });
  } catch (err) {
    // After a signal the start fails because its processes were stopped: the handler exits.
    if (stopRequested) return new Promise<never>(() => {});
    console.error(`cluster: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  }
  if (stopRequested) return new Promise<never>(() => {});
  const { facts } = cluster;
  console.log(`kubeconfig: ${facts.adminKubeconfig}`);
  console.log(`${NODE}: ${facts.agent.rootDir}`);
  console.log(`${NODE} api: ${facts.agent.url} token-file ${facts.agent.tokenFile}`);
  console.log(`${KUBELET_NODE}: ${facts.kubelet.rootDir}`);
  await new Promise<never>(() => {});
  return 0;
}

process.exit(await main());
