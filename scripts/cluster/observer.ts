// An observe-mode agent beside node kubelet-0's upstream kubelet (the deployment of `deploy/`,
// run as a local process): `--mode=observe` on the kubelet's root dir and the mount table of the
// cluster's private mount namespace, as the ClusterRole of deploy/base/agent-rbac.yaml allows.
//
// Contract:
// - {@link startKubeletObserver} works from any process on the machine that shares the cluster's
//   mount namespace (start.mjs and test.mjs run everything inside one), like startAgent: the agent
//   belongs to the caller, which must stop it. It resolves once the agent's /healthz answers.
// - The observer never writes below the kubelet's root dir: its token file and log live in the
//   state dir (`<state>/observers/<name>/agent-token`, `<logs>/<name>.log`). Only
//   `allowOrphanCleanup` lets it act, and then only through the guarded orphan cleanup.
// - Its identity is a client certificate for the user `volumescope:observer:<name>`, bound to the
//   ClusterRole `volumescope-agent-observe` of deploy/base/agent-rbac.yaml (applied here, with the
//   namespace it needs): exactly the reads the DaemonSet's agent may make (pods, nodes,
//   persistentvolumes, claims, csidrivers, volumeattachments, events), no write.
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../demo/process.ts';
import { ClusterAgent, HOST, KUBELET_NODE, issueClientIdentity, kubectl, type AgentFacts, type ClusterFacts } from './cluster.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The ClusterRole of observe mode (deploy/base/agent-rbac.yaml). */
export const OBSERVE_CLUSTER_ROLE = 'volumescope-agent-observe';

export interface KubeletObserverOptions {
  /** Names the identity, the log and the token file; a DNS label. Default `observer-kubelet-0`. */
  readonly name?: string;
  /** `--allow-orphan-cleanup` (default false: the observer only reads). */
  readonly allowOrphanCleanup?: boolean;
  /** `--observe-refresh-period` (default `2s`; the agent's own default is 10 s). */
  readonly refreshPeriod?: string;
  /** Default a free port on 127.0.0.1. */
  readonly port?: number;
  /** Appended to the flags (e.g. `--log-level=debug`). */
  readonly args?: readonly string[];
}

/** An observe-mode agent: the flags of deploy/base/agent-daemonset.yaml, pointed at kubelet-0. */
class ObserverAgent extends ClusterAgent {
  constructor(
    facts: AgentFacts,
    private readonly mountInfo: string,
    private readonly refreshPeriod: string,
    extraArgs: readonly string[],
    private readonly name: string,
  ) {
    super(facts, extraArgs);
  }

  protected override modeArgs(): string[] {
    return ['--mode=observe', `--mountinfo=${this.mountInfo}`, `--observe-refresh-period=${this.refreshPeriod}`];
  }

  /** Nothing is created below the kubelet's root dir; only the token file's directory in the state dir. */
  protected override prepare(): void {
    mkdirSync(dirname(this.facts.tokenFile), { recursive: true });
  }

  protected override processName(): string {
    return `${this.name} (observe ${this.facts.nodeName})`;
  }
}

/** The RBAC objects: deploy/'s namespace and observe-mode ClusterRole, and a binding for `user`. */
async function bindObserveRole(facts: ClusterFacts, name: string, user: string): Promise<void> {
  await kubectl(facts, ['apply', '-f', join(root, 'deploy', 'base', 'namespace.yaml'), '-f', join(root, 'deploy', 'base', 'agent-rbac.yaml')]);
  await kubectl(facts, ['apply', '-f', '-'], {
    input: [
      'apiVersion: rbac.authorization.k8s.io/v1',
      'kind: ClusterRoleBinding',
      `metadata: {name: ${name}, labels: {app.kubernetes.io/part-of: volumescope}}`,
      `roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: ${OBSERVE_CLUSTER_ROLE}}`,
      `subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: "${user}"}]`,
    ].join('\n'),
  });
}

/**
 * Starts an observe-mode agent for node kubelet-0 (see the file comment): `--mode=observe
 * --root-dir=<kubelet root> --mountinfo=/proc/self/mountinfo`, plus `--allow-orphan-cleanup` when
 * asked. Resolves once its API answers; the caller stops it ({@link ClusterAgent.stop}).
 */
export async function startKubeletObserver(facts: ClusterFacts, options: KubeletObserverOptions = {}): Promise<ClusterAgent> {
  const name = options.name ?? `observer-${KUBELET_NODE}`;
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(name)) throw new Error(`observer name ${JSON.stringify(name)} is not a DNS label`);
  const user = `volumescope:observer:${name}`;
  await bindObserveRole(facts, name, user);
  const identity = issueClientIdentity(facts, { file: name, user, groups: [] });
  const port = options.port ?? (await freePort(HOST));
  const agentFacts: AgentFacts = {
    nodeName: KUBELET_NODE,
    url: `http://${HOST}:${port}`,
    rootDir: facts.kubelet.rootDir,
    tokenFile: join(facts.stateDir, 'observers', name, 'agent-token'),
    kubeconfig: identity.kubeconfig,
    logFile: join(facts.logsDir, `${name}.log`),
  };
  const extra = [...(options.allowOrphanCleanup === true ? ['--allow-orphan-cleanup'] : []), ...(options.args ?? [])];
  // The cluster's processes share one private mount namespace, so this process's table is the kubelet's.
  const agent = new ObserverAgent(agentFacts, '/proc/self/mountinfo', options.refreshPeriod ?? '2s', extra, name);
  await agent.start();
  return agent;
}
