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
  KUBELET_NODE,
  NODE,
  componentVersion,
  issueClientIdentity,
  kubectl,
  kubectlRun,
  startAgent,
  tokenKubeconfig,
  waitForNodeReady,
  type AgentOptions,
  type ClusterAgent,
  type ClusterFacts,
  type KubectlOptions,
  type KubectlResult,
} from '../../scripts/cluster/cluster.ts';
import type { ClientIdentity } from '../../scripts/cluster/pki.ts';
import type { ExitInfo } from '../../scripts/demo/process.ts';

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
  /** kubelet-0's whole log (klog, --v=2). */
  kubeletLog: (): Promise<string> => readFile(facts.kubelet.logFile, 'utf8'),
  /** Restarts agent-0 in the process that owns it (SIGKILL with `kill9`); resolves with its exit. */
  async restartAgent(options: { kill9?: boolean } = {}): Promise<ExitInfo | null> {
    const res = await fetch(`${control.url}/agent/restart${options.kill9 === true ? '?kill9=1' : ''}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${control.token}` },
      signal: AbortSignal.timeout(150_000),
    });
    if (res.status !== 200) throw new Error(`restart of agent ${NODE}: ${res.status} ${await res.text()}`);
    return ((await res.json()) as { exit: ExitInfo | null }).exit;
  },
  /** agent-0's whole log (every start). */
  agentLog: (): Promise<string> => readFile(facts.agent.logFile, 'utf8'),
};
