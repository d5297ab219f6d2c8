/**
 * Agent discovery through the Kubernetes API (`VOLUMESCOPE_DISCOVERY=kubernetes`): the dashboard
 * lists and watches the agent pods (a DaemonSet's) by label, and every Running pod with a pod IP
 * becomes an agent named after its node, reached at `http://<podIP>:<port>` with the dashboard's
 * own ServiceAccount token. Nodes come and go as agent pods do. Server-only.
 *
 * Settings (environment):
 * - `VOLUMESCOPE_DISCOVERY_NAMESPACE`: where the agent pods run; default the namespace of the
 *   dashboard's own service account (`…/serviceaccount/namespace`), else `volumescope`.
 * - `VOLUMESCOPE_DISCOVERY_SELECTOR`: their label selector; default
 *   `app.kubernetes.io/name=volumescope-agent`.
 * - `VOLUMESCOPE_DISCOVERY_TOKEN_FILE`: the bearer token sent to every agent; default the
 *   service account token. It is read on every request (agent-proxy), since projected tokens
 *   rotate.
 * - `VOLUMESCOPE_AGENT_PORT`: the agent port when the pod names no container port `api`;
 *   default 7070.
 * - The API itself: `KUBECONFIG` when set, else the in-cluster service account
 *   (`KUBERNETES_SERVICE_HOST`), else `~/.kube/config`. Unlike client-node's `loadFromDefault`
 *   there is no fallback to `http://localhost:8080`: discovery that silently talks to nothing
 *   would look like "no agents".
 *
 * Failures (API down, 401, RBAC 403, a selector the API rejects) keep the last known agent list
 * and are reported as a {@link DiscoveryProblem} naming the variable to look at; listing and
 * watching are retried with backoff on the injected clock. `@kubernetes/client-node` is loaded
 * only when discovery is used (static configurations never load it).
 */
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { isIPv6 } from 'node:net';
import type { KubeConfig, KubernetesListObject, ListWatch, V1Pod } from '@kubernetes/client-node';
import { realClock, type Clock } from '../clock/clock.ts';
import type { DiscoveryProblem, DiscoveryStatus } from './discovery-status.ts';

// SETTINGS

/** `kubernetes` turns discovery on; empty or unset leaves it off. */
export const DISCOVERY_ENV = 'VOLUMESCOPE_DISCOVERY';
export const DISCOVERY_NAMESPACE_ENV = 'VOLUMESCOPE_DISCOVERY_NAMESPACE';
export const DISCOVERY_SELECTOR_ENV = 'VOLUMESCOPE_DISCOVERY_SELECTOR';
export const DISCOVERY_TOKEN_FILE_ENV = 'VOLUMESCOPE_DISCOVERY_TOKEN_FILE';
export const AGENT_PORT_ENV = 'VOLUMESCOPE_AGENT_PORT';

export const DEFAULT_DISCOVERY_SELECTOR = 'app.kubernetes.io/name=volumescope-agent';
export const DEFAULT_DISCOVERY_NAMESPACE = 'volumescope';
export const DEFAULT_AGENT_PORT = 7070;
/** The name of the container port that carries the agent API. */
export const AGENT_PORT_NAME = 'api';
/** Where Kubernetes mounts a pod's service account. */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** A discovery setting is malformed or missing; names the variable at fault. */
export class DiscoveryConfigError extends Error {
  override readonly name = 'DiscoveryConfigError';

  constructor(
    /** The environment variable to fix. */
    readonly variable: string,
    /** What is wrong with it (the message without the variable). */
    readonly detail: string,
  ) {
    super(`${variable}: ${detail}`);
  }
}

/** True for a {@link DiscoveryConfigError}. */
export function isDiscoveryConfigError(err: unknown): err is DiscoveryConfigError {
  return err instanceof DiscoveryConfigError;
}

/** Where the Kubernetes API configuration comes from. */
export type KubeApiSource =
  | { readonly kind: 'kubeconfig'; readonly files: readonly string[]; readonly variable: string }
  | { readonly kind: 'in-cluster'; readonly variable: string };

/** Everything discovery needs, parsed from the environment. */
export interface DiscoverySettings {
  readonly namespace: string;
  readonly selector: string;
  /** Absolute path of the token file sent to agents. */
  readonly tokenFile: string;
  /** The port of agents whose pod names no `api` container port. */
  readonly defaultPort: number;
  readonly api: KubeApiSource;
}

/** The environment as discovery reads it. */
export type DiscoveryEnv = Readonly<Record<string, string | undefined>>;

/** How settings reach the file system (injected by tests). */
export interface DiscoveryFiles {
  readonly cwd: string;
  /** The text of a file, or `null` when it does not exist or cannot be read. */
  readonly readText: (path: string) => string | null;
  readonly exists: (path: string) => boolean;
  readonly homeDir: string;
  readonly serviceAccountDir: string;
}

/** The process's file system. */
export function processDiscoveryFiles(): DiscoveryFiles {
  return {
    cwd: process.cwd(),
    readText: (path) => {
      try {
        return readFileSync(path, 'utf8');
      } catch {
        return null;
      }
    },
    exists: existsSync,
    homeDir: homedir(),
    serviceAccountDir: SERVICE_ACCOUNT_DIR,
  };
}

/** True when `VOLUMESCOPE_DISCOVERY=kubernetes`; throws for any other non-empty value. */
export function discoveryEnabled(env: DiscoveryEnv): boolean {
  const value = env[DISCOVERY_ENV]?.trim() ?? '';
  if (value === '') return false;
  if (value === 'kubernetes') return true;
  throw new DiscoveryConfigError(DISCOVERY_ENV, `${JSON.stringify(value)} is not a discovery mode (the only one is "kubernetes"; leave it empty for VOLUMESCOPE_AGENTS)`);
}

const DNS_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
/** A Kubernetes node name (DNS-1123 subdomain), which is also a valid dashboard agent name. */
const NODE_NAME = /^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$/;

/**
 * The settings of `env` (see the module comment). Throws a {@link DiscoveryConfigError} for a
 * malformed value, or when no Kubernetes API configuration can be found.
 */
export function parseDiscoverySettings(env: DiscoveryEnv, files: DiscoveryFiles): DiscoverySettings {
  let namespace = env[DISCOVERY_NAMESPACE_ENV]?.trim() ?? '';
  if (namespace === '') namespace = files.readText(join(files.serviceAccountDir, 'namespace'))?.trim() ?? '';
  if (namespace === '') namespace = DEFAULT_DISCOVERY_NAMESPACE;
  if (!DNS_LABEL.test(namespace)) {
    throw new DiscoveryConfigError(DISCOVERY_NAMESPACE_ENV, `${JSON.stringify(namespace)} is not a namespace name (lowercase letters, digits and '-', at most 63)`);
  }
  const selector = env[DISCOVERY_SELECTOR_ENV]?.trim() || DEFAULT_DISCOVERY_SELECTOR;
  if (/[\r\n]/.test(selector)) throw new DiscoveryConfigError(DISCOVERY_SELECTOR_ENV, 'must be one line');
  const tokenFile = resolve(files.cwd, env[DISCOVERY_TOKEN_FILE_ENV]?.trim() || join(files.serviceAccountDir, 'token'));
  const portText = env[AGENT_PORT_ENV]?.trim() ?? '';
  let defaultPort = DEFAULT_AGENT_PORT;
  if (portText !== '') {
    defaultPort = Number(portText);
    if (!/^[0-9]{1,5}$/.test(portText) || defaultPort < 1 || defaultPort > 65_535) {
      throw new DiscoveryConfigError(AGENT_PORT_ENV, `${JSON.stringify(portText)} is not a port (1-65535)`);
    }
  }
  return { namespace, selector, tokenFile, defaultPort, api: kubeApiSource(env, files) };
}

function kubeApiSource(env: DiscoveryEnv, files: DiscoveryFiles): KubeApiSource {
  const listed = (env.KUBECONFIG ?? '').split(delimiter).map((p) => p.trim()).filter((p) => p !== '');
  if (listed.length > 0) return { kind: 'kubeconfig', files: listed.map((p) => resolve(files.cwd, p)), variable: 'KUBECONFIG' };
  if ((env.KUBERNETES_SERVICE_HOST ?? '') !== '' && (env.KUBERNETES_SERVICE_PORT ?? '') !== '') {
    return { kind: 'in-cluster', variable: 'KUBERNETES_SERVICE_HOST' };
  }
  const home = join(files.homeDir, '.kube', 'config');
  if (files.exists(home)) return { kind: 'kubeconfig', files: [home], variable: 'KUBECONFIG' };
  throw new DiscoveryConfigError(
    DISCOVERY_ENV,
    'discovery needs the Kubernetes API: run the dashboard in a pod (its service account), or set KUBECONFIG',
  );
}

// PODS → AGENTS

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
export function agentPort(pod: AgentPod, defaultPort: number): number {
  for (const container of pod.spec?.containers ?? []) {
    for (const port of container.ports ?? []) {
      if (port.name === AGENT_PORT_NAME && Number.isInteger(port.containerPort) && port.containerPort > 0) return port.containerPort;
    }
  }
  return defaultPort;
}

/** `http://<ip>:<port>`, an IPv6 address in brackets. */
export function agentUrl(podIp: string, port: number): string {
  return `http://${isIPv6(podIp) ? `[${podIp}]` : podIp}:${port}`;
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
export function agentsFromPods(pods: Iterable<AgentPod>, settings: Pick<DiscoverySettings, 'tokenFile' | 'defaultPort'>): DiscoveredAgent[] {
  const byNode = new Map<string, AgentPod>();
  for (const pod of pods) {
    if (!isServing(pod)) continue;
    const node = pod.spec?.nodeName ?? '';
    const other = byNode.get(node);
    byNode.set(node, other === undefined ? pod : preferred(other, pod));
  }
  return [...byNode.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([node, pod]) => ({ name: node, url: agentUrl(pod.status?.podIP ?? '', agentPort(pod, settings.defaultPort)), tokenFile: settings.tokenFile }));
}

// ERRORS

const STATUS_TEXT: Readonly<Record<number, string>> = { 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 500: 'Internal Server Error', 503: 'Service Unavailable' };

/** The HTTP status of a client-node failure (`ApiException.code`, a watch error's `statusCode`). */
function httpStatus(err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const { code, statusCode } = err as { code?: unknown; statusCode?: unknown };
  if (typeof code === 'number' && code >= 100 && code < 600) return code;
  if (typeof statusCode === 'number') return statusCode;
  return undefined;
}

/** The API server's own words (`Status.message` in the body), if any. */
function apiMessage(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  let body: unknown = (err as { body?: unknown }).body;
  if (typeof body === 'string') {
    try {
      body = JSON.parse(body);
    } catch {
      return undefined;
    }
  }
  const message = typeof body === 'object' && body !== null ? (body as { message?: unknown }).message : undefined;
  return typeof message === 'string' && message !== '' ? message.split('\n', 1)[0] : undefined;
}

/** A transport failure in a few words: `fetch failed (ECONNREFUSED)`. */
function transportMessage(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause: unknown = err.cause;
  const code = typeof cause === 'object' && cause !== null ? (cause as { code?: unknown }).code : undefined;
  const text = err.message.split('\n', 1)[0] ?? '';
  return typeof code === 'string' ? `${text} (${code})` : text;
}

/**
 * A listing or watching failure as an operator reads it, blamed on the variable to check:
 * 403 is RBAC in the namespace, 400 is the selector, anything else is the API configuration.
 */
export function describeDiscoveryFailure(err: unknown, settings: DiscoverySettings, server: string): Omit<DiscoveryProblem, 'since'> {
  const status = httpStatus(err);
  const said = apiMessage(err);
  const http = status === undefined ? '' : `HTTP ${status}${STATUS_TEXT[status] !== undefined ? ` ${STATUS_TEXT[status]}` : ''}${said !== undefined ? `: ${said}` : ''}`;
  if (status === 403) {
    return {
      variable: DISCOVERY_NAMESPACE_ENV,
      message: `the dashboard may not list and watch pods in namespace ${JSON.stringify(settings.namespace)} (${http}); grant its service account list and watch on pods there, or set ${DISCOVERY_NAMESPACE_ENV} to the agents' namespace`,
    };
  }
  if (status === 400) {
    return { variable: DISCOVERY_SELECTOR_ENV, message: `the API rejected the label selector ${JSON.stringify(settings.selector)} (${http})` };
  }
  if (status === 401) {
    return { variable: settings.api.variable, message: `the Kubernetes API at ${server} rejected the dashboard's credentials (${http})` };
  }
  return {
    variable: settings.api.variable,
    message: `cannot list the agent pods at ${server}: ${status === undefined ? transportMessage(err) : http}`,
  };
}

// THE INFORMER

/** `@kubernetes/client-node`, loaded on first use. */
export type ClientNode = typeof import('@kubernetes/client-node');

/**
 * Loads client-node at run time. The bundler is told to leave the import alone, so the dashboard
 * build neither bundles the Kubernetes client nor needs it for static configurations.
 */
export function loadClientNode(): Promise<ClientNode> {
  return import(/* webpackIgnore: true */ /* turbopackIgnore: true */ '@kubernetes/client-node');
}

/** Restart delays after a failed list or watch: doubling from `initialMs` to `maxMs`. */
export interface DiscoveryBackoff {
  readonly initialMs: number;
  readonly maxMs: number;
}

export const DEFAULT_DISCOVERY_BACKOFF: DiscoveryBackoff = { initialMs: 1_000, maxMs: 30_000 };
/** How long one LIST may take before it counts as failed. */
export const DISCOVERY_LIST_TIMEOUT_MS = 30_000;

export interface AgentDiscoveryOptions {
  readonly settings: DiscoverySettings;
  readonly clock: Pick<Clock, 'now' | 'setTimeout' | 'clearTimeout'>;
  readonly backoff?: DiscoveryBackoff;
  readonly listTimeoutMs?: number;
  /** Called when the agent list or the status may have changed. Must not throw. */
  readonly onChange?: () => void;
  /** Loads client-node (default {@link loadClientNode}). */
  readonly clientNode?: () => Promise<ClientNode>;
}

type TimerHandle = ReturnType<Clock['setTimeout']>;

/**
 * Lists and watches the agent pods (client-node's `ListWatch` informer) and keeps the agent
 * list. What `ListWatch` does by itself: relists after 410 Gone and re-watches after clean closes
 * and client-side timeouts. What this adds: any other failure makes `ListWatch` report an error
 * and stop, so it is restarted with backoff, keeping its cached pods (the last known list); the
 * failure is the status's `error` until a watch is established again. `stop()` is final.
 */
export class AgentDiscovery {
  private readonly settings: DiscoverySettings;
  private readonly options: AgentDiscoveryOptions;
  private listWatch: ListWatch<V1Pod> | null = null;
  private server = '';
  private cached: DiscoveredAgent[] = [];
  private dirty = false;
  private listed = false;
  private problem: DiscoveryProblem | null = null;
  private stopped = false;
  private backoffMs = 0;
  private restartTimer: TimerHandle | null = null;
  private started: Promise<void> | null = null;
  /** Waiters of {@link whenSettled}: run once the pods were listed or a failure is known. */
  private readonly settledWaiters = new Set<() => void>();
  /** `ListWatch` reconnect delays, on the injected clock; released by stop. */
  private readonly delays = new Set<{ handle: TimerHandle; resolve: () => void }>();

  constructor(options: AgentDiscoveryOptions) {
    this.options = options;
    this.settings = options.settings;
  }

  /** The agents of the pods seen last (kept across failures), sorted by name. */
  agents(): readonly DiscoveredAgent[] {
    if (this.dirty && this.listWatch !== null) {
      this.dirty = false;
      this.cached = agentsFromPods(this.listWatch.list(), this.settings);
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
    if (this.restartTimer !== null) this.options.clock.clearTimeout(this.restartTimer);
    this.restartTimer = null;
    for (const delay of this.delays) {
      this.options.clock.clearTimeout(delay.handle);
      delay.resolve();
    }
    this.delays.clear();
    this.settle();
    await this.listWatch?.stop();
  }

  private async begin(): Promise<void> {
    let k8s: ClientNode;
    let kubeConfig: KubeConfig;
    try {
      k8s = await (this.options.clientNode ?? loadClientNode)();
      kubeConfig = loadKubeConfig(k8s, this.settings.api);
    } catch (err) {
      // Configuration does not fix itself: reported, not retried (a restart with a fix is needed).
      this.fail(isDiscoveryConfigError(err) ? { variable: err.variable, message: err.detail } : { variable: this.settings.api.variable, message: transportMessage(err) });
      return;
    }
    if (this.stopped) return;
    this.server = kubeConfig.getCurrentCluster()?.server ?? '';
    this.listWatch = this.createListWatch(k8s, kubeConfig);
    await this.run();
  }

  private createListWatch(k8s: ClientNode, kubeConfig: KubeConfig): ListWatch<V1Pod> {
    const api = kubeConfig.makeApiClient(k8s.CoreV1Api);
    const { namespace, selector } = this.settings;
    const active = (): boolean => !this.stopped;
    const onWatching = (): void => {
      this.markListed();
    };
    const onEstablished = (): void => {
      this.onEstablished();
    };
    /**
     * client-node's `Watch`, observed: a watch about to start means the list before it was
     * applied (an empty list has no add callback to say so); one that got its 200 means the API
     * works again. Nothing sent over the wire changes.
     */
    class ObservedWatch extends k8s.Watch {
      override async watch(...args: Parameters<InstanceType<ClientNode['Watch']>['watch']>): Promise<AbortController> {
        const [path, query, callback, done] = args;
        if (!active()) return new AbortController();
        onWatching();
        let failed = false;
        const observedDone = (err: unknown): void => {
          if (err !== null && err !== undefined) failed = true;
          done(err);
        };
        let controller: AbortController;
        try {
          controller = await super.watch(path, query, callback, observedDone);
        } catch (err) {
          // Thrown before the request (credentials could not be applied): report it as a failed
          // watch, so the ListWatch reports it instead of rejecting into nowhere.
          observedDone(err);
          return new AbortController();
        }
        if (!active()) controller.abort();
        else if (!failed) onEstablished();
        return controller;
      }
    }
    const list = (): Promise<KubernetesListObject<V1Pod>> =>
      this.withDeadline(api.listNamespacedPod({ namespace, labelSelector: selector }), this.options.listTimeoutMs ?? DISCOVERY_LIST_TIMEOUT_MS);
    const listWatch = new k8s.ListWatch<V1Pod>(`/api/v1/namespaces/${namespace}/pods`, new ObservedWatch(kubeConfig), list, false, selector, undefined, {
      delayFn: (ms) => this.delay(ms),
    });
    const changed = (): void => {
      if (this.stopped) return;
      this.dirty = true;
      this.options.onChange?.();
    };
    listWatch.on('add', changed);
    listWatch.on('update', changed);
    listWatch.on('delete', changed);
    listWatch.on('error', (err: unknown) => {
      if (!this.stopped) this.onError(err);
    });
    return listWatch;
  }

  private async run(): Promise<void> {
    const listWatch = this.listWatch;
    if (listWatch === null || this.stopped) return;
    try {
      await listWatch.start();
    } catch (err) {
      if (!this.stopped) this.onError(err);
    }
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
    this.backoffMs = 0;
    if (this.problem === null) return;
    this.problem = null;
    this.options.onChange?.();
  }

  private onError(err: unknown): void {
    this.fail(describeDiscoveryFailure(err, this.settings, this.server));
    const { initialMs, maxMs } = this.options.backoff ?? DEFAULT_DISCOVERY_BACKOFF;
    this.backoffMs = this.backoffMs === 0 ? initialMs : Math.min(this.backoffMs * 2, maxMs);
    if (this.restartTimer !== null) this.options.clock.clearTimeout(this.restartTimer);
    this.restartTimer = this.options.clock.setTimeout(() => {
      this.restartTimer = null;
      void this.run();
    }, this.backoffMs);
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

  private delay(ms: number): Promise<void> {
    return new Promise<void>((resolveDelay) => {
      if (this.stopped) {
        resolveDelay();
        return;
      }
      const entry = {
        handle: this.options.clock.setTimeout(() => {
          this.delays.delete(entry);
          resolveDelay();
        }, ms),
        resolve: resolveDelay,
      };
      this.delays.add(entry);
    });
  }

  private withDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
    return new Promise<T>((resolveCall, reject) => {
      const timer = this.options.clock.setTimeout(() => {
        reject(new Error(`listing pods took longer than ${ms} ms`));
      }, ms);
      promise.then(
        (value) => {
          this.options.clock.clearTimeout(timer);
          resolveCall(value);
        },
        (err: unknown) => {
          this.options.clock.clearTimeout(timer);
          reject(err instanceof Error ? err : new Error(String(err)));
        },
      );
    });
  }
}

/** The client configuration of `source`. Throws a {@link DiscoveryConfigError} naming the variable. */
export function loadKubeConfig(k8s: ClientNode, source: KubeApiSource): KubeConfig {
  const kc = new k8s.KubeConfig();
  if (source.kind === 'in-cluster') {
    // Reads KUBERNETES_SERVICE_HOST/PORT from process.env; the token through client-node's
    // tokenFile provider, which re-reads it (projected tokens rotate).
    kc.loadFromCluster();
    return kc;
  }
  source.files.forEach((path, i) => {
    try {
      if (i === 0) {
        kc.loadFromFile(path);
      } else {
        const more = new k8s.KubeConfig();
        more.loadFromFile(path);
        kc.mergeConfig(more, true);
      }
    } catch (err) {
      throw new DiscoveryConfigError(source.variable, `cannot load ${path} (${err instanceof Error ? err.message : String(err)})`);
    }
  });
  if (kc.getCurrentCluster() === null) {
    throw new DiscoveryConfigError(source.variable, `${source.files.join(delimiter)} selects no cluster (current-context ${JSON.stringify(kc.getCurrentContext())})`);
  }
  return kc;
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
  const discovery = new AgentDiscovery({ settings: parseDiscoverySettings(env, files()), clock });
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
