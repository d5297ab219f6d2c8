/**
 * Agent discovery through the Kubernetes API (`VOLUMESCOPE_DISCOVERY=kubernetes`): the dashboard
 * lists and watches the agent pods (a DaemonSet's) by label, and every Running pod with a pod IP
 * becomes an agent named after its node, reached at `http://<podIP>:<port>` with the dashboard's
 * own ServiceAccount token. Nodes come and go as agent pods do. Server-only. Its settings (the
 * environment) are discovery-settings.ts.
 *
 * The Kubernetes client is lib/kube-client, the agent's: its kubeconfig loader, its restarting
 * informer, request deadlines, error classification and backoff. Failures (API down, 401, RBAC
 * 403, a selector the API rejects) keep the last known agent list and are reported as a
 * {@link DiscoveryProblem} naming the variable to look at; listing and watching are retried with
 * backoff on the injected clock. `@kubernetes/client-node` is loaded only when discovery is used
 * (static configurations never load it).
 */
import { isIPv6 } from 'node:net';
import type { KubeConfig, V1Pod } from '@kubernetes/client-node';
import { realClock, type Clock } from '../clock/clock.ts';
import { describeApiError } from '../kube-client/api-errors.ts';
import type { Backoff } from '../kube-client/backoff.ts';
import { loadClientNode, type ClientNode } from '../kube-client/client-node.ts';
import { inClusterKubeConfig, isKubeConfigError, loadKubeConfigFiles, type KubeConfigEnv } from '../kube-client/kubeconfig.ts';
import { RequestDeadlines } from '../kube-client/request-deadline.ts';
import { RestartingInformer } from '../kube-client/restarting-informer.ts';
import type { DiscoveryProblem, DiscoveryStatus } from './discovery-status.ts';
import {
  AGENT_PORT_ENV,
  DISCOVERY_ENV,
  DISCOVERY_NAMESPACE_ENV,
  DISCOVERY_SELECTOR_ENV,
  DISCOVERY_TOKEN_FILE_ENV,
  DiscoveryConfigError,
  SERVICE_ACCOUNT_DIR,
  isDiscoveryConfigError,
  parseDiscoverySettings,
  processDiscoveryFiles,
  type DiscoveryEnv,
  type DiscoveryFiles,
  type DiscoverySettings,
  type KubeApiSource,
} from './discovery-settings.ts';

// PODS → AGENTS

/** The name of the container port that carries the agent API. */
const AGENT_PORT_NAME = 'api';
/** A Kubernetes node name (DNS-1123 subdomain), which is also a valid dashboard agent name. */
const NODE_NAME = /^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$/;

/**
 * The fields of a pod discovery reads. Structural, because pods arrive both as client-node's
 * class instances (the LIST) and as plain JSON (WATCH events, with timestamps as strings).
 */
export interface AgentPod {
  readonly metadata?: { readonly name?: string; readonly creationTimestamp?: Date | string; readonly deletionTimestamp?: Date | string };
  readonly spec?: {
    readonly nodeName?: string;
    readonly containers?: readonly { readonly ports?: readonly { readonly name?: string; readonly containerPort: number }[] }[];
  };
  readonly status?: { readonly phase?: string; readonly podIP?: string };
}

/** One discovered agent (the shape of `AgentConfig` in agents-config.ts). */
export interface DiscoveredAgent {
  readonly name: string;
  readonly url: string;
  readonly tokenFile: string;
}

/** The agent port of a pod: its container port named `api`, else `defaultPort`. */
function agentPort(pod: AgentPod, defaultPort: number): number {
  for (const container of pod.spec?.containers ?? []) {
    for (const port of container.ports ?? []) {
      if (port.name === AGENT_PORT_NAME && Number.isInteger(port.containerPort) && port.containerPort > 0) return port.containerPort;
    }
  }
  return defaultPort;
}

/** `http(s)://<ip>:<port>`, an IPv6 address in brackets. */
function agentUrl(podIp: string, port: number, scheme: 'http' | 'https' = 'http'): string {
  return `${scheme}://${isIPv6(podIp) ? `[${podIp}]` : podIp}:${port}`;
}

/** Whether a pod serves as an agent: Running, on a node, with a pod IP. */
function isServing(pod: AgentPod): boolean {
  return pod.status?.phase === 'Running' && (pod.status.podIP ?? '') !== '' && NODE_NAME.test(pod.spec?.nodeName ?? '');
}

/**
 * Of two agent pods on one node (a rolling update), the one to talk to: not being deleted, then
 * the newest, then by name (deterministic).
 */
function preferred(a: AgentPod, b: AgentPod): AgentPod {
  const deletingA = a.metadata?.deletionTimestamp !== undefined;
  const deletingB = b.metadata?.deletionTimestamp !== undefined;
  if (deletingA !== deletingB) return deletingA ? b : a;
  const createdA = new Date(a.metadata?.creationTimestamp ?? 0).getTime();
  const createdB = new Date(b.metadata?.creationTimestamp ?? 0).getTime();
  if (createdA !== createdB) return createdA > createdB ? a : b;
  return (a.metadata?.name ?? '') <= (b.metadata?.name ?? '') ? a : b;
}

/**
 * The agents of `pods`: one per node with a serving agent pod, named after the node, sorted by
 * name. Pods that are not Running, have no IP or no node are skipped.
 */
export function agentsFromPods(pods: Iterable<AgentPod>, settings: Pick<DiscoverySettings, 'tokenFile' | 'defaultPort' | 'scheme'>): DiscoveredAgent[] {
  return servingAgentPods(pods, settings.defaultPort, settings.scheme).map(({ node, url }) => ({ name: node, url, tokenFile: settings.tokenFile }));
}

/** One node's serving agent pod, as {@link servingAgentPods} chose it. */
export interface ServingAgentPod {
  readonly node: string;
  readonly pod: AgentPod;
  /** The agent port (container port `api`, else the default). */
  readonly port: number;
  /** `<scheme>://<podIP>:<port>`. */
  readonly url: string;
}

/**
 * The agent pod to talk to on each node (the choice {@link agentsFromPods} makes), sorted by
 * node, with its port and URL: for clients that reach the pod some other way than its IP (the
 * kubectl plugin's port-forward needs the pod's name).
 */
export function servingAgentPods(pods: Iterable<AgentPod>, defaultPort: number, scheme?: DiscoverySettings['scheme']): ServingAgentPod[] {
  const byNode = new Map<string, AgentPod>();
  for (const pod of pods) {
    if (!isServing(pod)) continue;
    const node = pod.spec?.nodeName ?? '';
    const other = byNode.get(node);
    byNode.set(node, other === undefined ? pod : preferred(other, pod));
  }
  return [...byNode.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([node, pod]) => {
      const port = agentPort(pod, defaultPort);
      return { node, pod, port, url: agentUrl(pod.status?.podIP ?? '', port, scheme) };
    });
}


// ERRORS

/**
 * A listing or watching failure as an operator reads it, blamed on the variable to check:
 * 403 is RBAC in the namespace, 400 is the selector, anything else is the API configuration.
 */
function describeDiscoveryFailure(err: unknown, settings: DiscoverySettings, server: string): Omit<DiscoveryProblem, 'since'> {
  const { status, message: said } = describeApiError(err);
  if (status === 403) {
    return {
      variable: DISCOVERY_NAMESPACE_ENV,
      message: `the dashboard may not list and watch pods in namespace ${JSON.stringify(settings.namespace)} (${said}); grant its service account list and watch on pods there, or set ${DISCOVERY_NAMESPACE_ENV} to the agents' namespace`,
    };
  }
  if (status === 400) {
    return { variable: DISCOVERY_SELECTOR_ENV, message: `the API rejected the label selector ${JSON.stringify(settings.selector)} (${said})` };
  }
  if (status === 401) {
    return { variable: settings.api.variable, message: `the Kubernetes API at ${server} rejected the dashboard's credentials (${said})` };
  }
  return { variable: settings.api.variable, message: `cannot list the agent pods at ${server}: ${said}` };
}

// THE INFORMER

/** Restart delays after a failed list or watch: doubling from `initialMs` to `maxMs`. */
export type DiscoveryBackoff = Backoff;

const DEFAULT_DISCOVERY_BACKOFF: DiscoveryBackoff = { initialMs: 1_000, maxMs: 30_000 };
/** How long one LIST may take before it counts as failed. */
const DISCOVERY_LIST_TIMEOUT_MS = 30_000;

export interface AgentDiscoveryOptions {
  readonly settings: DiscoverySettings;
  readonly clock: Pick<Clock, 'now' | 'setTimeout' | 'clearTimeout'>;
  readonly backoff?: DiscoveryBackoff;
  readonly listTimeoutMs?: number;
  /** Called when the agent list or the status may have changed. Must not throw. */
  readonly onChange?: () => void;
  /** Loads client-node (default {@link loadClientNode}). */
  readonly clientNode?: () => Promise<ClientNode>;
  /**
   * The environment of the in-cluster configuration (`KUBERNETES_SERVICE_HOST`/`_PORT`), the one
   * the settings were parsed from; default `process.env`.
   */
  readonly env?: KubeConfigEnv;
  /** The service account directory of the in-cluster configuration; default the pod's. */
  readonly serviceAccountDir?: string;
}

/**
 * Lists and watches the agent pods (lib/kube-client's restarting informer over client-node's
 * `ListWatch`) and keeps the agent list. A failure keeps the cached pods (the last known list)
 * and is the status's `error` until a watch is established again. `stop()` is final.
 */
export class AgentDiscovery {
  private readonly settings: DiscoverySettings;
  private readonly options: AgentDiscoveryOptions;
  private informer: RestartingInformer<V1Pod> | null = null;
  private deadlines: RequestDeadlines | null = null;
  private server = '';
  private cached: DiscoveredAgent[] = [];
  private dirty = false;
  private listed = false;
  private problem: DiscoveryProblem | null = null;
  private stopped = false;
  private started: Promise<void> | null = null;
  /** Waiters of {@link whenSettled}: run once the pods were listed or a failure is known. */
  private readonly settledWaiters = new Set<() => void>();

  constructor(options: AgentDiscoveryOptions) {
    this.options = options;
    this.settings = options.settings;
  }

  /** The agents of the pods seen last (kept across failures), sorted by name. */
  agents(): readonly DiscoveredAgent[] {
    if (this.dirty && this.informer !== null) {
      this.dirty = false;
      this.cached = agentsFromPods(this.informer.objects(), this.settings);
    }
    return this.cached;
  }

  /** Where discovery looks, whether it has listed, and its current failure. */
  status(): DiscoveryStatus {
    return { namespace: this.settings.namespace, selector: this.settings.selector, listed: this.listed, error: this.problem };
  }

  /**
   * Starts listing and watching; resolves after the first attempt (whether it worked or not).
   * Idempotent.
   */
  start(): Promise<void> {
    this.started ??= this.begin();
    return this.started;
  }

  /**
   * Resolves once the pods were listed, or a failure is known, or after `timeoutMs` (so a page
   * can wait briefly for the first list instead of showing "no agents").
   */
  whenSettled(timeoutMs: number): Promise<void> {
    if (this.listed || this.problem !== null || this.stopped) return Promise.resolve();
    return new Promise<void>((resolveWait) => {
      const done = (): void => {
        this.options.clock.clearTimeout(timer);
        this.settledWaiters.delete(done);
        resolveWait();
      };
      const timer = this.options.clock.setTimeout(done, timeoutMs);
      this.settledWaiters.add(done);
    });
  }

  /** Stops for good: no callbacks, restarts or watches afterwards. Idempotent. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.settle();
    this.deadlines?.abortAll();
    await this.informer?.stop();
  }

  private async begin(): Promise<void> {
    let k8s: ClientNode;
    let kubeConfig: KubeConfig;
    try {
      k8s = await (this.options.clientNode ?? loadClientNode)();
      kubeConfig = loadDiscoveryKubeConfig(k8s, this.settings.api, this.options.env ?? process.env, this.options.serviceAccountDir ?? SERVICE_ACCOUNT_DIR);
    } catch (err) {
      // Configuration does not fix itself: reported, not retried (a restart with a fix is needed).
      this.fail(isDiscoveryConfigError(err) ? { variable: err.variable, message: err.detail } : { variable: this.settings.api.variable, message: describeApiError(err).message });
      return;
    }
    if (this.stopped) return;
    this.server = kubeConfig.getCurrentCluster()?.server ?? '';
    this.informer = this.createInformer(k8s, kubeConfig);
    await this.informer.start();
  }

  private createInformer(k8s: ClientNode, kubeConfig: KubeConfig): RestartingInformer<V1Pod> {
    const api = kubeConfig.makeApiClient(k8s.CoreV1Api);
    const { namespace, selector } = this.settings;
    const deadlines = new RequestDeadlines({ clientNode: k8s, clock: this.options.clock, timeoutMs: this.options.listTimeoutMs ?? DISCOVERY_LIST_TIMEOUT_MS });
    this.deadlines = deadlines;
    const path = `/api/v1/namespaces/${namespace}/pods`;
    const changed = (): void => {
      if (this.stopped) return;
      this.dirty = true;
      this.options.onChange?.();
    };
    return new RestartingInformer<V1Pod>({
      clientNode: k8s,
      kubeConfig,
      clock: this.options.clock,
      path,
      labelSelector: selector,
      list: () => deadlines.run(`LIST ${path}?labelSelector=${selector}`, (options) => api.listNamespacedPod({ namespace, labelSelector: selector }, options)),
      restartBackoff: this.options.backoff ?? DEFAULT_DISCOVERY_BACKOFF,
      handlers: {
        upsert: changed,
        remove: changed,
        listed: () => {
          this.markListed();
        },
        established: () => {
          this.onEstablished();
        },
        failed: (err: unknown) => {
          if (!this.stopped) this.fail(describeDiscoveryFailure(err, this.settings, this.server));
        },
      },
    });
  }

  /** The first list was applied (a watch is about to start after it). */
  private markListed(): void {
    if (this.listed) return;
    this.listed = true;
    this.dirty = true;
    this.settle();
    this.options.onChange?.();
  }

  /** A watch is established: the API works, so the failure (if any) is over. */
  private onEstablished(): void {
    if (this.problem === null) return;
    this.problem = null;
    this.options.onChange?.();
  }

  private fail(problem: Omit<DiscoveryProblem, 'since'>): void {
    const same = this.problem !== null && this.problem.variable === problem.variable && this.problem.message === problem.message;
    if (!same) this.problem = { ...problem, since: this.problem?.since ?? this.options.clock.now() };
    this.settle();
    if (!same) this.options.onChange?.();
  }

  private settle(): void {
    for (const waiter of [...this.settledWaiters]) waiter();
  }
}

/**
 * The client configuration of `source`, loaded by lib/kube-client's loader (the in-cluster one
 * from `env` and `serviceAccountDir`). Throws a {@link DiscoveryConfigError} naming the variable.
 */
export function loadDiscoveryKubeConfig(k8s: Pick<ClientNode, 'KubeConfig'>, source: KubeApiSource, env: KubeConfigEnv, serviceAccountDir: string): KubeConfig {
  try {
    return source.kind === 'in-cluster' ? inClusterKubeConfig(k8s, env, serviceAccountDir) : loadKubeConfigFiles(k8s, source.files);
  } catch (err) {
    if (isKubeConfigError(err)) throw new DiscoveryConfigError(source.variable, err.message);
    throw err;
  }
}

// PROCESS WIRING

/** How long a page or relay request waits for the first list before answering without it. */
export const FIRST_LIST_WAIT_MS = 5_000;

/** The variables the process discovery depends on (a change replaces it: tests, dev reloads). */
const WATCHED_ENV = [
  DISCOVERY_ENV,
  DISCOVERY_NAMESPACE_ENV,
  DISCOVERY_SELECTOR_ENV,
  DISCOVERY_TOKEN_FILE_ENV,
  AGENT_PORT_ENV,
  'KUBECONFIG',
  'KUBERNETES_SERVICE_HOST',
  'KUBERNETES_SERVICE_PORT',
] as const;

interface DiscoveryGlobals {
  __volumescopeDiscovery?: { key: string; discovery: AgentDiscovery };
}

/**
 * The discovery of this server process for `env` (normally `process.env`), started on first use
 * and kept on `globalThis` (Next may evaluate this module more than once). Settings are parsed
 * once per distinct value of the variables. Throws a {@link DiscoveryConfigError} for malformed
 * settings.
 */
export function serverDiscovery(env: DiscoveryEnv, files: () => DiscoveryFiles = processDiscoveryFiles, clock: AgentDiscoveryOptions['clock'] = realClock): AgentDiscovery {
  const key = WATCHED_ENV.map((name) => env[name] ?? '').join('\u0000');
  const g = globalThis as DiscoveryGlobals;
  const current = g.__volumescopeDiscovery;
  if (current?.key === key) return current.discovery;
  const fs = files();
  const discovery = new AgentDiscovery({ settings: parseDiscoverySettings(env, fs), clock, env, serviceAccountDir: fs.serviceAccountDir });
  if (current !== undefined) void current.discovery.stop();
  g.__volumescopeDiscovery = { key, discovery };
  void discovery.start();
  return discovery;
}

/** The process discovery if one was started, else `null`. */
export function startedServerDiscovery(): AgentDiscovery | null {
  return (globalThis as DiscoveryGlobals).__volumescopeDiscovery?.discovery ?? null;
}

/** Stops and forgets the process discovery (tests; a later `serverDiscovery` starts a new one). */
export async function stopServerDiscovery(): Promise<void> {
  const g = globalThis as DiscoveryGlobals;
  const current = g.__volumescopeDiscovery;
  g.__volumescopeDiscovery = undefined;
  await current?.discovery.stop();
}
