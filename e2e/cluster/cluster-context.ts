/**
 * What a cluster test uses: the facts of the run's cluster (e2e/cluster/global-setup.ts) and the
 * helpers of scripts/cluster/cluster.ts bound to them. Test names carry the versions
 * ({@link versionTag}), so a report says which upstream release was tested.
 */
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { inject } from 'vitest';
import { PROC_SELF_MOUNTINFO, parseMountInfo, type MountInfo } from '../../lib/mount-utils/mountinfo.ts';
import {
  DRIVER,
  KUBELET_NODE,
  NODE,
  componentVersion,
  issueClientIdentity,
  kubectl,
  kubectlRun,
  startAgent,
  tokenKubeconfig,
  waitForCsiDriver,
  waitForNodeReady,
  type AgentOptions,
  type ClusterAgent,
  type ClusterFacts,
  type KubectlOptions,
  type KubectlResult,
} from '../../scripts/cluster/cluster.ts';
import type { ClientIdentity } from '../../scripts/cluster/pki.ts';
import { waitUntil, type ExitInfo } from '../../scripts/demo/process.ts';

export const facts: ClusterFacts = inject('cluster');
const control = inject('clusterControl');

/**
 * The node's mount table: the test processes share the cluster's private mount namespace
 * (scripts/cluster/test.mjs), so this process's mountinfo is what the agent and the kubelet mounted.
 * Read synchronously, for wait probes.
 */
export const mountTable = (): MountInfo[] => parseMountInfo(readFileSync(PROC_SELF_MOUNTINFO, 'utf8'));

/** `kube-apiserver v1.34.4`, for test names. */
export const versionTag = (component: string): string => `${component} ${componentVersion(facts.versions, component)}`;

/** The fields of a core/v1 Event the cluster tests read. */
export interface KubeEvent {
  reason: string;
  message: string;
  type: string;
  count?: number;
  lastTimestamp?: string;
  involvedObject: { uid?: string };
  source?: { component?: string; host?: string };
}

/** The Events of pod `namespace/pod` with `reason`, as kubectl lists them. */
export async function podEvents(namespace: string, pod: string, reason: string): Promise<KubeEvent[]> {
  const out = await kubectl(facts, ['get', 'events', '-n', namespace, '--field-selector', `involvedObject.kind=Pod,involvedObject.name=${pod},reason=${reason}`, '-o', 'json']);
  return (JSON.parse(out) as { items: KubeEvent[] }).items;
}

/** The UID of pod `namespace/pod`. */
export async function podUid(namespace: string, pod: string): Promise<string> {
  return (await kubectl(facts, ['get', 'pod', pod, '-n', namespace, '-o', 'jsonpath={.metadata.uid}'])).trim();
}

/** A ReadWriteOnce claim of the cluster's `csi-hostpath` StorageClass (csi-loop), as YAML. */
export const claimYaml = (namespace: string, name: string, size = '16Mi'): string =>
  [
    'apiVersion: v1',
    'kind: PersistentVolumeClaim',
    `metadata: {name: ${name}, namespace: ${namespace}}`,
    `spec: {accessModes: [ReadWriteOnce], storageClassName: csi-hostpath, resources: {requests: {storage: ${size}}}}`,
  ].join('\n');

/** Polls until claim `namespace/name` is Bound (60 s); resolves with its PV's name. */
export const waitForClaimBound = (namespace: string, name: string): Promise<string> =>
  waitUntil(
    `claim ${name} Bound`,
    async () => {
      const claim = JSON.parse(await kubectl(facts, ['get', 'pvc', name, '-n', namespace, '-o', 'json'])) as { status: { phase?: string }; spec: { volumeName?: string } };
      return claim.status.phase === 'Bound' ? claim.spec.volumeName : undefined;
    },
    { deadlineMs: 60_000, intervalMs: 500 },
  );

/** POSTs an action to the global setup's control server; rejects unless it answers 200. */
async function controlAction<T>(path: string, what: string): Promise<T> {
  const res = await fetch(`${control.url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${control.token}` }, signal: AbortSignal.timeout(150_000) });
  if (res.status !== 200) throw new Error(`${what}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

export const cluster = {
  facts,
  kubectl: (args: readonly string[], options?: KubectlOptions): Promise<string> => kubectl(facts, args, options),
  kubectlRun: (args: readonly string[], options?: KubectlOptions): Promise<KubectlResult> => kubectlRun(facts, args, options),
  issueClientIdentity: (id: ClientIdentity) => issueClientIdentity(facts, id),
  tokenKubeconfig: (file: string, token: string): string => tokenKubeconfig(facts, file, token),
  /** One more agent node, owned by the calling test (stop it in afterAll). */
  startAgent: (options: AgentOptions): Promise<ClusterAgent> => startAgent(facts, options),
  /** Rejects when node agent-0 is not Ready within `timeoutMs`. */
  waitForNodeReady: (timeoutMs: number): Promise<void> => waitForNodeReady(facts, NODE, timeoutMs),
  /** Rejects when node kubelet-0 (the upstream kubelet, facts.kubelet) is not Ready within `timeoutMs`. */
  waitForKubeletNodeReady: (timeoutMs: number): Promise<void> => waitForNodeReady(facts, KUBELET_NODE, timeoutMs),
  /** Rejects when CSINode `nodeName` does not list the cluster's driver within `timeoutMs` (waitForCsiDriver). */
  waitForCsiDriver: (nodeName: string, timeoutMs: number): Promise<void> => waitForCsiDriver(facts, nodeName, DRIVER, timeoutMs),
  /** kubelet-0's whole log (klog, --v=2). */
  kubeletLog: (): Promise<string> => readFile(facts.kubelet.logFile, 'utf8'),
  /** Restarts agent-0 in the process that owns it (SIGKILL with `kill9`); resolves with its exit. */
  async restartAgent(options: { kill9?: boolean } = {}): Promise<ExitInfo | null> {
    return (await controlAction<{ exit: ExitInfo | null }>(`/agent/restart${options.kill9 === true ? '?kill9=1' : ''}`, `restart of agent ${NODE}`)).exit;
  },
  /**
   * Stops kubelet-0's kubelet in the process that owns it (RunningCluster.stopKubelet: mounts and
   * pod directories stay, the Node stays Ready); resolves with its exit. Start it again before the
   * file ends: the next files expect it running.
   */
  async stopKubelet(): Promise<ExitInfo> {
    return (await controlAction<{ exit: ExitInfo }>('/kubelet/stop', `stop of the kubelet of ${KUBELET_NODE}`)).exit;
  },
  /** Starts kubelet-0's kubelet again; resolves once its Node is Ready with a heartbeat from this start. */
  async startKubelet(): Promise<void> {
    await controlAction('/kubelet/start', `start of the kubelet of ${KUBELET_NODE}`);
  },
  /** agent-0's whole log (every start). */
  agentLog: (): Promise<string> => readFile(facts.agent.logFile, 'utf8'),
};

/** What {@link tearDownWorkload} removes and waits for. */
export interface WorkloadTeardown {
  /** The test file's namespaces: their pods and claims are deleted, then the namespaces. */
  readonly namespaces: readonly string[];
  /** True for a mount point of the file's own volumes (pod volume dirs, CSI staging dirs). */
  readonly ownsMount: (mountPoint: string) => boolean;
  /** The file's PVs: done only once no VolumeAttachment names one of them. */
  readonly pvs?: ReadonlySet<string>;
  readonly deadlineMs: number;
}

/**
 * A cluster test file's teardown, so the next file's view of the nodes starts clean: deletes the
 * pods and claims of its namespaces (by kind, not by deleting the namespace: this cluster's
 * namespace controller may not finish in time), waits until none of those pods is left, none of
 * its mounts is in the mount table and no VolumeAttachment names one of its PVs, then deletes the
 * namespaces without waiting. Rejects with what is still left when `deadlineMs` passes.
 */
export async function tearDownWorkload(t: WorkloadTeardown): Promise<void> {
  for (const ns of t.namespaces) {
    await cluster.kubectlRun(['delete', 'pods', '--all', '-n', ns, '--wait=false']);
    await cluster.kubectlRun(['delete', 'pvc', '--all', '-n', ns, '--wait=false']);
  }
  const mountsLeft = (): string[] => mountTable().map((m) => m.mountPoint).filter(t.ownsMount);
  const podsLeft = async (): Promise<number> => {
    let n = 0;
    for (const ns of t.namespaces) n += (JSON.parse(await cluster.kubectl(['get', 'pods', '-n', ns, '-o', 'json'])) as { items: unknown[] }).items.length;
    return n;
  };
  const attachmentsLeft = async (): Promise<string[]> => {
    if (t.pvs === undefined || t.pvs.size === 0) return [];
    const list = JSON.parse(await cluster.kubectl(['get', 'volumeattachments', '-o', 'json'])) as { items: { metadata: { name: string }; spec: { source: { persistentVolumeName?: string } } }[] };
    return list.items.filter((va) => t.pvs?.has(va.spec.source.persistentVolumeName ?? '') === true).map((va) => va.metadata.name);
  };
  const describeLeft = async (): Promise<string> => `pods ${await podsLeft()}, mounts [${mountsLeft().join(', ')}], VolumeAttachments [${(await attachmentsLeft()).join(', ')}]`;
  try {
    await waitUntil('the test workload deleted, its mounts and VolumeAttachments gone', async () => mountsLeft().length === 0 && (await podsLeft()) === 0 && (await attachmentsLeft()).length === 0, {
      deadlineMs: t.deadlineMs,
      intervalMs: 500,
    });
  } catch (err) {
    throw new Error(`${err instanceof Error ? err.message : String(err)}; left: ${await describeLeft()}`, { cause: err });
  }
  for (const ns of t.namespaces) await cluster.kubectlRun(['delete', 'namespace', ns, '--wait=false']);
}
