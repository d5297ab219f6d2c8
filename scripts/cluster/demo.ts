// `npm run demo:cluster`: the demo on the real local cluster (started by scripts/cluster/demo.mjs: the
// pinned Node, the dashboard build, as root a private mount namespace). It starts the cluster of
// `npm run cluster` (cluster.ts) with its own state dir, an observe-mode agent beside node kubelet-0
// (observer.ts), applies the demo workload (demo-workload.ts) through the API server, and runs the
// dashboard with both agents: `agent-0` (managed mode, the node's volume manager) and the observer.
//
// Contract:
// - state under `.volumescope/cluster-demo/` (or a short temp dir, stateDirFor), reused by the next
//   start unless `--reset`; the demo's dashboard log is `<state>/logs/dashboard.log`;
// - the dashboard on http://localhost:3000 (PORT overrides; a taken port fails before anything
//   starts);
// - SIGINT/SIGTERM (Ctrl-C): the worker timers stop, then the dashboard, the observer, and the
//   cluster in its own order (agent-0 and the kubelet, leftover mounts below the state dir, the
//   rest). A signal during the cluster's start stops what has started. Further signals are
//   ignored, so an impatient second Ctrl-C cannot leave mounts behind. Exit 0 after a stop on a
//   signal, 1 when the start failed or a process exited on its own.
//
// The functions the demo is made of are exported, so the cluster test (e2e/cluster/demo-cluster.test.ts)
// runs the same pieces against the test cluster.
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { dashboardPort, startDashboard, type DashboardAgent } from '../demo/dashboard.ts';
import { SerialSteps } from '../demo/serial-steps.ts';
import { assertPortFree, isStartError, pause, waitUntil, type ManagedProcess } from '../demo/process.ts';
import { errorMessage } from '../../lib/volume/errors.ts';
import { HOST, KUBELET_NODE, NODE, kubectl, kubectlRun, startCluster, stateDirFor, type ClusterAgent, type ClusterFacts, type RunningCluster } from './cluster.ts';
import { WORKER_LABEL, clusterDemoObjects, clusterDemoPods, stuckHostPath, workerPod, type ClusterDemoOptions, type KubeObject } from './demo-workload.ts';
import { startKubeletObserver } from './observer.ts';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The dashboard's name of the observe-mode agent beside node kubelet-0. */
export const OBSERVER_NAME = `${KUBELET_NODE}-observer`;
/** The StorageClass the cluster creates (cluster.ts). */
const STORAGE_CLASS = 'csi-hostpath';

/** The workload's options on the cluster at `facts`; hostPath directories live below its state dir. */
export function clusterDemoOptions(facts: Pick<ClusterFacts, 'stateDir'>, namespace: string): ClusterDemoOptions {
  return { namespace, managedNode: NODE, kubeletNode: KUBELET_NODE, hostDataDir: join(facts.stateDir, 'host-paths', namespace), storageClass: STORAGE_CLASS };
}

const list = (items: readonly KubeObject[]): string => JSON.stringify({ apiVersion: 'v1', kind: 'List', items });

/**
 * Creates pods with `kubectl apply`, retried while the ServiceAccount admission plugin refuses
 * them because the controller has not yet created the namespace's `default` ServiceAccount.
 */
async function applyPods(facts: ClusterFacts, pods: readonly KubeObject[], deadlineMs: number): Promise<void> {
  let last = '';
  await waitUntil(
    'the demo pods admitted (the ServiceAccount admission plugin needs the namespace\'s default ServiceAccount)',
    async () => {
      const r = await kubectlRun(facts, ['apply', '-f', '-'], { input: list(pods) });
      last = r.stderr.trim();
      return r.code === 0;
    },
    { deadlineMs, intervalMs: 500 },
  ).catch((err: unknown) => {
    throw new Error(`kubectl apply of the demo pods failed: ${last === '' ? errorMessage(err) : last}`);
  });
}

/** Applies the namespace, its objects and the demo's pods (idempotent: a reused cluster keeps them). */
export async function applyClusterDemo(facts: ClusterFacts, o: ClusterDemoOptions, deadlineMs = 120_000): Promise<void> {
  await kubectl(facts, ['apply', '-f', '-'], { input: list(clusterDemoObjects(o)) });
  await applyPods(facts, clusterDemoPods(o), deadlineMs);
}

/** The agents the dashboard lists: agent-0, then the observer beside kubelet-0. */
export function clusterDemoAgents(facts: Pick<ClusterFacts, 'agent'>, observer: ClusterAgent): DashboardAgent[] {
  return [
    { name: facts.agent.nodeName, url: facts.agent.url, tokenFile: facts.agent.tokenFile },
    { name: OBSERVER_NAME, url: observer.facts.url, tokenFile: observer.facts.tokenFile },
  ];
}

export const WORKER_EVERY_MS = 30_000;
export const WORKER_LIFETIME_MS = 60_000;

/**
 * Short-lived pods, so the dashboard shows volumes being set up and torn down: a worker every
 * {@link WORKER_EVERY_MS}, alternating between the two nodes, deleted {@link WORKER_LIFETIME_MS}
 * later. A failing step is reported and the next one runs on its timer.
 */
export class ClusterDemoWorkers {
  private readonly steps: SerialSteps;
  private count = 0;

  constructor(
    private readonly facts: ClusterFacts,
    private readonly o: ClusterDemoOptions,
    say: (line: string) => void,
  ) {
    this.steps = new SerialSteps((err) => {
      say(`demo workload step failed: ${errorMessage(err)}`);
    });
  }

  /** Removes the workers an earlier run left, then arms the timer. */
  async start(): Promise<void> {
    await kubectl(this.facts, ['delete', 'pods', '-n', this.o.namespace, '-l', WORKER_LABEL, '--wait=false', '--ignore-not-found']);
    this.steps.every(WORKER_EVERY_MS, 2_000, () => this.next());
  }

  /** Cancels the timers and waits for the step in flight; the workers that run stay. */
  async stop(): Promise<void> {
    await this.steps.stop();
  }

  private async next(): Promise<void> {
    const n = ++this.count;
    const node = n % 2 === 1 ? this.o.managedNode : this.o.kubeletNode;
    const worker = workerPod(this.o, node, n);
    const name = (worker['metadata'] as { name: string }).name;
    await kubectl(this.facts, ['apply', '-f', '-'], { input: JSON.stringify(worker) });
    this.steps.after(WORKER_LIFETIME_MS, async () => {
      await kubectl(this.facts, ['delete', 'pod', '-n', this.o.namespace, name, '--wait=false', '--ignore-not-found']);
    });
  }
}

// THE COMMAND

const HELP = `npm run demo:cluster -- [flags]

The demo on the real local cluster (needs the upstream build of \`npm run cluster:build\`, made first
if missing: Go >= 1.26). Starts the cluster of \`npm run cluster\` with its state under
.volumescope/cluster-demo/, an observe-mode VolumeScope agent (${OBSERVER_NAME}) beside node ${KUBELET_NODE}
(the upstream kubelet), the demo workload in namespace demo (pods on ${NODE} and ${KUBELET_NODE}: healthy
volumes, a csi-hostpath claim each, a stuck hostPath each, short-lived workers), and the dashboard
listing ${NODE} and ${OBSERVER_NAME} on http://localhost:3000 (PORT overrides). Ctrl-C stops the
dashboard, the agents and the cluster, in that order.

Flags:
  --reset   delete the state dir first (a fresh cluster)
  --help    print this help
`;

function say(line: string): void {
  process.stdout.write(`demo:cluster: ${line}\n`);
}

async function main(): Promise<number> {
  const { values } = parseArgs({ options: { reset: { type: 'boolean' }, help: { type: 'boolean' } }, strict: true });
  if (values.help === true) {
    process.stdout.write(HELP);
    return 0;
  }

  // Signals are caught from the first moment. During the cluster's start a signal stops what has
  // started (the start then rejects); afterwards the steps below see it and stop in order.
  let signals = 0;
  let stopCluster: (() => Promise<void>) | null = null;
  let clusterStarted = false;
  let onSignal: () => void = () => undefined;
  const stopSignal = new Promise<void>((resolvePromise) => {
    onSignal = resolvePromise;
  });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => {
      signals++;
      if (signals > 1) {
        say('still stopping so that nothing stays mounted; please wait…');
        return;
      }
      say('stopping…');
      onSignal();
      if (clusterStarted) return;
      // Nothing runs yet that could hold a mount (the upstream build, the PKI): just exit.
      if (stopCluster === null) process.exit(1);
      void stopCluster();
    });
  }

  const port = dashboardPort();
  await assertPortFree(HOST, port, 'the dashboard');
  const stateDir = stateDirFor(resolve(REPO_ROOT, '.volumescope', 'cluster-demo'), 'cluster-demo');
  if (stateDir.note !== undefined) say(stateDir.note);

  let cluster: RunningCluster;
  try {
    cluster = await startCluster({
      stateDir: stateDir.dir,
      reset: values.reset === true,
      log: (line) => {
        process.stdout.write(`cluster: ${line}\n`);
      },
      onStoppable: (s) => {
        stopCluster = s;
      },
    });
  } catch (err) {
    if (signals > 0) return 0;
    process.stderr.write(`demo:cluster: the cluster could not start: ${errorMessage(err)}\n`);
    return 1;
  }
  clusterStarted = true;
  const { facts } = cluster;
  const options = clusterDemoOptions(facts, 'demo');

  let observer: ClusterAgent | null = null;
  let dashboard: ManagedProcess | null = null;
  let workers: ClusterDemoWorkers | null = null;
  let exitCode = 0;
  try {
    if (signals === 0) {
      say(`starting ${OBSERVER_NAME}: an observe-mode agent beside ${KUBELET_NODE}…`);
      observer = await startKubeletObserver(facts, { name: OBSERVER_NAME });
    }
    if (signals === 0) {
      say('applying the demo workload (namespace demo)…');
      await applyClusterDemo(facts, options);
      workers = new ClusterDemoWorkers(facts, options, say);
      await workers.start();
    }
    if (signals === 0 && observer !== null) {
      say('starting the dashboard…');
      dashboard = await startDashboard({ repoRoot: REPO_ROOT, host: HOST, port, logFile: join(facts.logsDir, 'dashboard.log'), agents: clusterDemoAgents(facts, observer) });
    }
    if (signals === 0 && observer !== null) {
      const kubectlCommand = `${join(facts.buildDir, 'bin', 'kubectl')} --kubeconfig ${facts.adminKubeconfig}`;
      process.stdout.write(
        [
          '',
          `VolumeScope dashboard: http://localhost:${String(port)}`,
          '',
          `  ${NODE}: a VolumeScope agent in managed mode, the node's volume manager (API ${facts.agent.url})`,
          `  ${KUBELET_NODE}: the upstream kubelet; ${OBSERVER_NAME}: a VolumeScope agent in observe mode beside it (API ${observer.facts.url})`,
          `  control plane on ${HOST}: etcd, kube-apiserver ${facts.apiServerUrl}, kube-controller-manager, ${facts.driverName} with csi-attacher, csi-provisioner, csi-resizer`,
          `  namespace demo: web-0, db-0 (claim data-${NODE}), log-shipper-0 on ${NODE}; api-0, reports-0 (claim data-${KUBELET_NODE}), log-shipper-1 on ${KUBELET_NODE};`,
          `    a worker pod every ${String(WORKER_EVERY_MS / 1000)} s, alternating between the nodes, each up for ${String(WORKER_LIFETIME_MS / 1000)} s`,
          `  log-shipper-0 and log-shipper-1 are stuck: their hostPath directories do not exist; create one to watch its pod recover:`,
          `    mkdir -p ${stuckHostPath(options, NODE)}`,
          `  kubectl: ${kubectlCommand} -n demo get pods -o wide`,
          `  state and logs under ${facts.stateDir}/  ·  Ctrl-C stops everything`,
          '',
          '',
        ].join('\n'),
      );
      // Run until a signal, or until a process exits on its own.
      const procs = (): ManagedProcess[] => [cluster.agent.process, cluster.kubelet, observer?.process ?? null, dashboard].filter((p): p is ManagedProcess => p !== null);
      while (signals === 0) {
        const dead = procs().filter((p) => p.crashed);
        if (dead.length > 0) {
          exitCode = 1;
          for (const p of dead) process.stderr.write(`demo:cluster: ${p.name} exited unexpectedly; log ${p.options.logFile}:\n${await p.logTail()}\n`);
          break;
        }
        await Promise.race([pause(1000), stopSignal]);
      }
    }
  } catch (err) {
    if (signals === 0 || !isStartError(err)) {
      exitCode = 1;
      process.stderr.write(`demo:cluster: ${errorMessage(err)}\n`);
    }
  } finally {
    if (signals === 0) say('stopping…');
    await workers?.stop();
    if (dashboard !== null) {
      say('stopping the dashboard…');
      await dashboard.stop(10_000);
    }
    say('stopping the agents and the cluster…');
    await observer?.stop();
    await cluster.stop();
    say('stopped');
  }
  return exitCode;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().then(
    (code) => {
      process.exit(code);
    },
    (err: unknown) => {
      process.stderr.write(`demo:cluster: ${errorMessage(err)}\n`);
      process.exit(1);
    },
  );
}
