// A real Kubernetes control plane on 127.0.0.1 with VolumeScope agents as its nodes, as a
// library: `npm run cluster` (main.ts) is a thin CLI over {@link startCluster}, and the cluster
// tests (`npm run test:cluster`, e2e/cluster/) start one per run from their global setup.
//
// Contract:
// - {@link startCluster} starts etcd, kube-apiserver, kube-controller-manager, the CSI driver with
//   its sidecars, node `agent-0` (a managed-mode agent with the identity system:node:agent-0) and
//   node `kubelet-0` (the upstream kubelet, `kube kubelet`, identity system:node:kubelet-0, with a
//   csi-loop node instance of its own), in that order, from the upstream build (build.ts), with
//   state in `stateDir` (reused unless `reset`). It resolves once the agent serves its API and
//   (with `waitForNodeReady`) both nodes were waited for; a failed start stops what it started and
//   rejects.
// - {@link RunningCluster.stop} stops the nodes first (the agent keeps its mounts on SIGTERM by
//   design, the kubelet leaves its pods' mounts as a stopped kubelet does), unmounts what they left
//   below the state dir, then the CSI processes, the controller manager, the API server and etcd.
// - {@link RunningCluster.stopKubelet} and {@link RunningCluster.startKubelet} stop kubelet-0's
//   kubelet and start it again with the same flags and root dir (a kubelet that goes down on a real
//   node: its mounts stay), for tests of what a stopped kubelet leaves behind.
// - {@link ClusterFacts} is plain data (JSON): what a process that did not start the cluster needs
//   to use it (a test worker gets it through vitest's provide/inject). The functions that take
//   facts ({@link kubectl}, {@link issueClientIdentity}, {@link startAgent}, {@link nodeReadiness})
//   work from any process on the machine.
// - The processes belong to the process that started them (scripts/demo/process.ts: detached,
//   killed when it exits); run it inside a private mount namespace (start.mjs) so no mount leaks.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findLeftoverMounts, unmountLeftovers } from '../demo/mount-check.ts';
import { ManagedProcess, assertPortFree, childEnv, freePort, httpStatus, isStartError, waitUntil, type ExitInfo } from '../demo/process.ts';
import { ensureUpstreamBuild, type Manifest } from './build.ts';
import { ensurePki, kubeconfig, type ClientIdentity, type Pki } from './pki.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const HOST = '127.0.0.1';
/** The node the cluster starts with. */
export const NODE = 'agent-0';
/** The node run by the upstream kubelet (`kube kubelet`, upstream/kube/cmd/kube/kubelet.go). */
export const KUBELET_NODE = 'kubelet-0';

/**
 * The CSI driver the cluster runs. The upstream csi-driver-host-path cannot be built here (the
 * module proxy refuses it, see upstream/README.md), so the project's own CSI test driver stands
 * in: csi-loop implements the controller publish/unpublish the attacher drives and serves the
 * kubelet plugin registration itself (in place of node-driver-registrar).
 */
export const DRIVER = 'csi-loop.volumescope.dev';

/** The process names (and log file names) of node kubelet-0's kubelet and csi-loop instance. */
const KUBELET_PROCESS = `kubelet-${KUBELET_NODE}`;
const KUBELET_CSI_PROCESS = `csi-driver-${KUBELET_NODE}`;

/** The identities of the cluster's clients: CN = user, O = groups. */
const ADMIN: ClientIdentity = { file: 'admin', user: 'kubernetes-admin', groups: ['system:masters'] };
const CONTROLLER_MANAGER: ClientIdentity = { file: 'controller-manager', user: 'system:kube-controller-manager', groups: [] };
/** The sidecars run as cluster admins here: their upstream RBAC manifests are not part of the modules. */
const SIDECARS: ClientIdentity = { file: 'csi-sidecars', user: 'volumescope:csi-sidecars', groups: ['system:masters'] };

/** A node's identity, as the Node authorizer and NodeRestriction recognise it. */
export const nodeIdentity = (nodeName: string): ClientIdentity => ({ file: nodeName, user: `system:node:${nodeName}`, groups: ['system:nodes'] });

// TYPES

/** The PKI's files (pki.ts) without the per-client functions, plus the admin's certificate and key. */
export type PkiPaths = Omit<Pki, 'clientCert' | 'clientKey'> & { readonly adminCert: string; readonly adminKey: string };

/** One agent's facts (see {@link ClusterAgent}). */
export interface AgentFacts {
  readonly nodeName: string;
  readonly url: string;
  readonly rootDir: string;
  readonly tokenFile: string;
  readonly kubeconfig: string;
  readonly logFile: string;
}

/**
 * Node {@link KUBELET_NODE}: the upstream kubelet and its csi-loop node instance (own socket and
 * control API, on the controller instance's state dir: one driver, one backend; see the comment
 * at its start in {@link startCluster}).
 */
export interface KubeletFacts {
  readonly nodeName: string;
  /** The kubelet's --root-dir: `<stateDir>/nodes/<node>` (pods/, plugins/, plugins_registry/). */
  readonly rootDir: string;
  readonly kubeconfig: string;
  /** `<logsDir>/kubelet-<node>.log`. */
  readonly logFile: string;
  /** The node instance of csi-loop: its CSI socket, control API, state dir (the controller instance's) and log. */
  readonly csiSocket: string;
  readonly csiControlUrl: string;
  readonly csiStateDir: string;
  readonly csiLogFile: string;
}

/** What a process needs to use a running cluster; plain data. */
export interface ClusterFacts {
  readonly stateDir: string;
  /** The upstream build: `bin/` holds kubectl and the components. */
  readonly buildDir: string;
  /** The build manifest: the versions of the binaries ({@link componentVersion}). */
  readonly versions: Manifest;
  readonly apiServerUrl: string;
  readonly adminKubeconfig: string;
  readonly pki: PkiPaths;
  readonly logsDir: string;
  readonly csiSocket: string;
  /** The control API (faults, drivers/csi-loop/README.md) of the controller instance the sidecars call. */
  readonly csiControlUrl: string;
  readonly driverName: string;
  /** Node {@link NODE}. */
  readonly agent: AgentFacts;
  /** Node {@link KUBELET_NODE}. */
  readonly kubelet: KubeletFacts;
}

export interface StartClusterOptions {
  /** Absolute; created when missing, reused by the next start unless `reset`. */
  readonly stateDir: string;
  /** Delete the state dir first (refused while something is mounted below it). */
  readonly reset?: boolean;
  /** Wait up to `nodeTimeoutMs` for nodes agent-0 and kubelet-0 to become Ready (default true). Not Ready is logged, not an error. */
  readonly waitForNodeReady?: boolean;
  /** Default 60 s. */
  readonly nodeTimeoutMs?: number;
  /** Appended to agent-0's flags (e.g. `--authentication-token-webhook`). */
  readonly agentArgs?: readonly string[];
  /**
   * Appended to kubelet-0's flags (upstream/kube/cmd/kube/kubelet.go), e.g. `--port=<n>` to serve
   * the kubelet's API and `/metrics` on 127.0.0.1 (none by default). Kept for its restarts.
   */
  readonly kubeletArgs?: readonly string[];
  /**
   * agent-0 runs this bundle (deploy/image/bundle-agent.mjs, as the container image does) instead
   * of agent/main.ts through tsx, with Node's compile cache in `<stateDir>/node-compile-cache`.
   */
  readonly agentBundle?: string;
  /** Node's own flags for agent-0, before its script (e.g. `--cpu-prof`, `--cpu-prof-dir=<dir>`). */
  readonly agentNodeArgs?: readonly string[];
  /**
   * Called as soon as the cluster can be stopped, before the start completes, with the same stop
   * as {@link RunningCluster.stop}: a signal handler can then stop a half-started cluster in order
   * (the start rejects once its processes are gone).
   */
  readonly onStoppable?: (stop: () => Promise<void>) => void;
  /** Progress lines; default `cluster: <line>` on stdout. */
  readonly log?: (line: string) => void;
}

/** A state dir that cannot be used as asked (made by another build, mounts below it on --reset). */
export class ClusterStateError extends Error {
  override readonly name = 'ClusterStateError';
}
export const isClusterStateError = (e: unknown): e is ClusterStateError => e instanceof ClusterStateError;

/** A kubectl run that exited non-zero; the message quotes the command and its stderr. */
export class KubectlError extends Error {
  override readonly name = 'KubectlError';
  constructor(
    readonly args: readonly string[],
    readonly result: KubectlResult,
  ) {
    super(`kubectl ${args.join(' ')} exited ${result.code}: ${result.stderr.trim() || result.stdout.trim()}`);
  }
}
export const isKubectlError = (e: unknown): e is KubectlError => e instanceof KubectlError;

interface SavedState {
  /** The upstream build key the state was made with. */
  key: string;
  ports: { etcd: number; etcdPeer: number; apiserver: number; agent: number; kubeletCsiControl?: number; csiControl?: number };
}

// FACTS-BASED HELPERS (any process)

/** The version of a component of the build (`kube-apiserver` → `v1.34.4`); throws when absent. */
export function componentVersion(versions: Manifest, component: string): string {
  const b = versions.binaries.find((x) => x.components.includes(component));
  if (b === undefined) throw new Error(`the upstream build has no ${component}`);
  return b.version;
}

export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface KubectlOptions {
  /** Written to kubectl's stdin (for `-f -`). */
  input?: string;
  /** Default the admin kubeconfig. */
  kubeconfig?: string;
}

/** Runs the build's kubectl; resolves with its exit code and output whatever the code. */
export function kubectlRun(facts: Pick<ClusterFacts, 'buildDir' | 'adminKubeconfig'>, args: readonly string[], options: KubectlOptions = {}): Promise<KubectlResult> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(join(facts.buildDir, 'bin', 'kubectl'), ['--kubeconfig', options.kubeconfig ?? facts.adminKubeconfig, ...args], { cwd: root, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      resolvePromise({ code: code ?? (signal === null ? 1 : 128), stdout, stderr });
    });
    child.stdin.end(options.input ?? '');
  });
}

/** Runs kubectl; resolves with stdout, rejects with a {@link KubectlError} on a non-zero exit. */
export async function kubectl(facts: Pick<ClusterFacts, 'buildDir' | 'adminKubeconfig'>, args: readonly string[], options: KubectlOptions = {}): Promise<string> {
  const result = await kubectlRun(facts, args, options);
  if (result.code !== 0) throw new KubectlError(args, result);
  return result.stdout;
}

/**
 * A client certificate (signed by the cluster CA) and a kubeconfig for any user and groups, e.g.
 * a second node or a person; kept when it exists. The kubeconfig is `<stateDir>/<file>.kubeconfig`.
 */
export function issueClientIdentity(facts: Pick<ClusterFacts, 'stateDir' | 'pki' | 'apiServerUrl'>, id: ClientIdentity): { kubeconfig: string; cert: string; key: string } {
  const pki = ensurePki(facts.pki.dir, [id]);
  const file = join(facts.stateDir, `${id.file}.kubeconfig`);
  writeFileSync(file, kubeconfig(pki, facts.apiServerUrl, id), { mode: 0o600 });
  return { kubeconfig: file, cert: pki.clientCert(id), key: pki.clientKey(id) };
}

/**
 * A kubeconfig that authenticates with a bearer token (a service account's, from `kubectl create
 * token`), written to `<stateDir>/<file>.kubeconfig`.
 */
export function tokenKubeconfig(facts: Pick<ClusterFacts, 'stateDir' | 'pki' | 'apiServerUrl'>, file: string, token: string): string {
  const path = join(facts.stateDir, `${file}.kubeconfig`);
  const ca = readFileSync(facts.pki.caCert).toString('base64');
  writeFileSync(
    path,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '- name: volumescope',
      '  cluster:',
      `    server: ${facts.apiServerUrl}`,
      `    certificate-authority-data: ${ca}`,
      'users:',
      `- name: ${file}`,
      '  user:',
      `    token: ${token}`,
      'contexts:',
      `- name: ${file}@volumescope`,
      '  context:',
      '    cluster: volumescope',
      `    user: ${file}`,
      `current-context: ${file}@volumescope`,
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  return path;
}

interface ApiResponse {
  status: number;
  body: string;
}

/** A GET as the cluster admin. */
function apiGet(facts: Pick<ClusterFacts, 'apiServerUrl' | 'pki'>, path: string): Promise<ApiResponse> {
  const url = new URL(facts.apiServerUrl);
  return new Promise((resolvePromise, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path,
        method: 'GET',
        ca: readFileSync(facts.pki.caCert),
        cert: readFileSync(facts.pki.adminCert),
        key: readFileSync(facts.pki.adminKey),
        timeout: 3000,
      },
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

/**
 * Whether node `nodeName` is Ready now, and what its Ready condition (or the GET) says. With
 * `heartbeatSince` (epoch ms) Ready counts only when the condition's lastHeartbeatTime (whole
 * seconds) is not older: no node-lifecycle controller runs here, so a stopped kubelet's Node stays
 * Ready, and a restarted one must be seen reporting again.
 */
export async function nodeReadiness(facts: Pick<ClusterFacts, 'apiServerUrl' | 'pki'>, nodeName: string, heartbeatSince?: number): Promise<{ ready: boolean; detail: string }> {
  const r = await apiGet(facts, `/api/v1/nodes/${nodeName}`);
  if (r.status !== 200) {
    let message = r.body;
    try {
      message = (JSON.parse(r.body) as { message?: string }).message ?? r.body;
    } catch {
      // not JSON: the body as it is
    }
    return { ready: false, detail: `GET /api/v1/nodes/${nodeName}: ${r.status} ${message}` };
  }
  const node = JSON.parse(r.body) as { status?: { conditions?: { type: string; status: string; reason?: string; lastHeartbeatTime?: string }[] } };
  const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
  if (ready === undefined) return { ready: false, detail: `node ${nodeName} exists but has no Ready condition` };
  const detail = `Ready=${ready.status} (${ready.reason ?? ''})`;
  if (heartbeatSince !== undefined && Date.parse(ready.lastHeartbeatTime ?? '') < Math.floor(heartbeatSince / 1000) * 1000) {
    return { ready: false, detail: `${detail}, last heartbeat ${ready.lastHeartbeatTime ?? 'never'}: none since ${new Date(heartbeatSince).toISOString()}` };
  }
  return { ready: ready.status === 'True', detail };
}

/**
 * Polls until node `nodeName` is Ready (with a heartbeat since `heartbeatSince`, see
 * {@link nodeReadiness}); rejects after `timeoutMs` (or when `node`, the agent or the kubelet
 * process, exits) with what its Ready condition said last.
 */
export async function waitForNodeReady(
  facts: Pick<ClusterFacts, 'apiServerUrl' | 'pki'>,
  nodeName: string,
  timeoutMs: number,
  node?: ClusterAgent | ManagedProcess,
  heartbeatSince?: number,
): Promise<void> {
  let last = '';
  const proc = node instanceof ClusterAgent ? node.process : (node ?? null);
  try {
    await waitUntil(
      `node ${nodeName} Ready`,
      async () => {
        const r = await nodeReadiness(facts, nodeName, heartbeatSince);
        last = r.detail;
        return r.ready;
      },
      { deadlineMs: timeoutMs, ...(proc === null ? {} : { process: proc }), intervalMs: 1000 },
    );
  } catch (err) {
    if (!isStartError(err) || (proc?.exitInfo ?? null) !== null) throw err;
    throw new NodeNotReadyError(nodeName, timeoutMs, last);
  }
}

/**
 * Polls until CSINode `nodeName` lists `driver` (the node's plugin registration went through and
 * the node wrote it); rejects after `timeoutMs` (or when `node` exits) with what it listed last.
 * A Ready Node does not imply it: the kubelet reports Ready before its plugin watcher has
 * registered the driver, and until then the attach/detach controller refuses every attach to the
 * node with `CSINode <node> does not contain driver <driver>`.
 */
export async function waitForCsiDriver(
  facts: Pick<ClusterFacts, 'apiServerUrl' | 'pki'>,
  nodeName: string,
  driver: string,
  timeoutMs: number,
  node?: ClusterAgent | ManagedProcess,
): Promise<void> {
  const proc = node instanceof ClusterAgent ? node.process : (node ?? null);
  await waitUntil(
    `CSINode ${nodeName} listing driver ${driver}`,
    async () => {
      const r = await apiGet(facts, `/apis/storage.k8s.io/v1/csinodes/${nodeName}`);
      if (r.status !== 200) return false;
      const csiNode = JSON.parse(r.body) as { spec?: { drivers?: { name: string }[] | null } };
      return (csiNode.spec?.drivers ?? []).some((d) => d.name === driver);
    },
    { deadlineMs: timeoutMs, ...(proc === null ? {} : { process: proc }), intervalMs: 250 },
  );
}

/** A node that did not become Ready in time; `detail` is its last Ready condition. */
export class NodeNotReadyError extends Error {
  override readonly name = 'NodeNotReadyError';
  constructor(
    readonly nodeName: string,
    readonly timeoutMs: number,
    readonly detail: string,
  ) {
    super(`node ${nodeName} is not Ready after ${Math.round(timeoutMs / 1000)} s: ${detail}`);
  }
}
export const isNodeNotReadyError = (e: unknown): e is NodeNotReadyError => e instanceof NodeNotReadyError;

// AGENTS

export interface AgentOptions {
  readonly nodeName: string;
  /** Default a free port. */
  readonly port?: number;
  /** Appended to the managed-mode flags (see {@link ClusterAgent.args}). */
  readonly args?: readonly string[];
  /** Default the node identity system:node:<nodeName> (group system:nodes), issued now. */
  readonly kubeconfig?: string;
}

/**
 * One agent process as a node of the cluster: managed mode, controller attach/detach, its root
 * dir `<stateDir>/nodes/<node>`, its API on 127.0.0.1. Restartable with the same flags.
 */
export class ClusterAgent {
  readonly facts: AgentFacts;
  private proc: ManagedProcess | null = null;

  constructor(
    facts: AgentFacts,
    private readonly extraArgs: readonly string[],
    private readonly bundle?: { readonly path: string; readonly compileCacheDir: string },
    private readonly nodeArgs: readonly string[] = [],
  ) {
    this.facts = facts;
  }

  get process(): ManagedProcess | null {
    return this.proc;
  }

  /** The agent's command line after `node` (agent/node/flags.ts). */
  args(): string[] {
    const { nodeName, rootDir, url, tokenFile, kubeconfig: kc } = this.facts;
    return [
      '--max-semi-space-size=8',
      '--expose-gc',
      ...this.nodeArgs,
      ...(this.bundle === undefined ? ['--import', 'tsx', join(root, 'agent', 'main.ts')] : [this.bundle.path]),
      ...this.modeArgs(),
      `--kubeconfig=${kc}`,
      `--node-name=${nodeName}`,
      `--root-dir=${rootDir}`,
      `--listen=${new URL(url).host}`,
      `--token-file=${tokenFile}`,
      ...this.extraArgs,
    ];
  }

  /**
   * The flags of the agent's mode: managed, controller attach/detach, and the Node registered by
   * the agent (it is this node's volume manager and no kubelet runs beside it). An observe-mode
   * agent (scripts/cluster/observer.ts) overrides this and {@link prepare}.
   */
  protected modeArgs(): string[] {
    return ['--mode=managed', '--controller-attach-detach=true', '--register-node=true'];
  }

  /** Creates what the agent expects below its root dir before it starts (managed mode: plugins_registry). */
  protected prepare(): void {
    mkdirSync(join(this.facts.rootDir, 'plugins_registry'), { recursive: true });
  }

  /** For messages and the process list: `agent <node>`. */
  protected processName(): string {
    return `agent ${this.facts.nodeName}`;
  }

  /** Starts the process and waits until /healthz answers 200 (rejects when it exits first). */
  async start(): Promise<void> {
    this.prepare();
    // The bundle's code cache (deploy/image/agent-entry.mjs) is written 5 s after a start instead of
    // 30 s: a bench's agent is restarted sooner than that, where a node's has run for days.
    const env = this.bundle === undefined ? childEnv() : childEnv({ NODE_COMPILE_CACHE: this.bundle.compileCacheDir, VOLUMESCOPE_CODE_CACHE_DELAY_MS: '5000' });
    this.proc = ManagedProcess.start({ name: this.processName(), args: this.args(), cwd: root, env, logFile: this.facts.logFile });
    await waitUntil(`${this.processName()} /healthz`, async () => (await httpStatus(`${this.facts.url}/healthz`)) === 200, { deadlineMs: 90_000, process: this.proc, intervalMs: 250 });
  }

  /**
   * Stops the agent (SIGTERM; SIGKILL with `kill9`, so nothing runs on its way out) and starts it
   * again with the same flags, port and directories. The log file gets a marker line between.
   */
  async restart(options: { kill9?: boolean } = {}): Promise<ExitInfo | null> {
    const exit = options.kill9 === true ? ((await this.proc?.kill()) ?? null) : await this.stop();
    appendFileSync(this.facts.logFile, `\n--- cluster: ${this.processName()} ${options.kill9 === true ? 'killed (SIGKILL)' : 'stopped'}, starting again ---\n`);
    await this.start();
    return exit;
  }

  /** SIGTERM, SIGKILL after 15 s; null when it never ran. Mounts stay (the agent keeps them by design). */
  async stop(): Promise<ExitInfo | null> {
    return this.proc === null ? null : this.proc.stop(15_000);
  }

  /** The whole log (every start, appended). */
  log(): Promise<string> {
    return readFile(this.facts.logFile, 'utf8');
  }
}

/** The facts of an agent for node `nodeName` of the cluster at `facts`. */
async function agentFacts(facts: Pick<ClusterFacts, 'stateDir' | 'pki' | 'apiServerUrl' | 'logsDir'>, options: AgentOptions): Promise<AgentFacts> {
  const port = options.port ?? (await freePort(HOST));
  const rootDir = join(facts.stateDir, 'nodes', options.nodeName);
  return {
    nodeName: options.nodeName,
    url: `http://${HOST}:${port}`,
    rootDir,
    tokenFile: join(rootDir, 'agent-token'),
    kubeconfig: options.kubeconfig ?? issueClientIdentity(facts, nodeIdentity(options.nodeName)).kubeconfig,
    logFile: join(facts.logsDir, `agent-${options.nodeName}.log`),
  };
}

/**
 * Starts one more agent as a node of the cluster at `facts` (any process; the agent belongs to
 * the caller, which must stop it). Resolves once its API answers.
 */
export async function startAgent(facts: Pick<ClusterFacts, 'stateDir' | 'pki' | 'apiServerUrl' | 'logsDir'>, options: AgentOptions): Promise<ClusterAgent> {
  const agent = new ClusterAgent(await agentFacts(facts, options), options.args ?? []);
  await agent.start();
  return agent;
}

// THE CLUSTER

export interface RunningCluster {
  readonly facts: ClusterFacts;
  /** Node agent-0. */
  readonly agent: ClusterAgent;
  /** Node kubelet-0's kubelet process (the current one after {@link startKubelet}). */
  readonly kubelet: ManagedProcess;
  /**
   * Stops node kubelet-0's kubelet (SIGTERM, SIGKILL after 15 s), as a kubelet goes down on a real
   * node: its pods' mounts and directories stay, its Node stays Ready (no node-lifecycle
   * controller runs here), and the API server goes on accepting changes to its pods (a pod deleted
   * now with `--grace-period=0 --force` is gone from the API while its directory stays on the
   * node). Rejects when it is not running. Resolves with its exit.
   */
  stopKubelet(): Promise<ExitInfo>;
  /**
   * Starts kubelet-0's kubelet again with the same flags and root dir (it reconstructs its volumes
   * from the pod directories and cleans up those of deleted pods) and resolves once the Node is
   * Ready with a heartbeat from this start and its CSINode lists the cluster's driver; rejects after `timeoutMs` (default 60 s), when it
   * exits first, or when it is running.
   */
  startKubelet(timeoutMs?: number): Promise<void>;
  kubectl(args: readonly string[], options?: KubectlOptions): Promise<string>;
  /** Restarts agent-0 (see {@link ClusterAgent.restart}). */
  restartAgent(options?: { kill9?: boolean }): Promise<ExitInfo | null>;
  /** agent-0's whole log. */
  agentLog(): Promise<string>;
  /** Rejects with {@link NodeNotReadyError} when agent-0 is not Ready within `timeoutMs`. */
  waitForNodeReady(timeoutMs: number): Promise<void>;
  /** Nodes first, unmount leftovers, then the rest; idempotent. */
  stop(): Promise<void>;
}

/** Chooses the ports: the saved ones while free, otherwise new ones (and says which changed). */
async function choosePorts(saved: SavedState['ports'] | undefined, say: (line: string) => void): Promise<SavedState['ports']> {
  const pick = async (name: keyof SavedState['ports']): Promise<number> => {
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
  return { etcd: await pick('etcd'), etcdPeer: await pick('etcdPeer'), apiserver: await pick('apiserver'), agent: await pick('agent'), kubeletCsiControl: await pick('kubeletCsiControl'), csiControl: await pick('csiControl') };
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

/** The longest unix socket path Linux takes: `sun_path` is 108 bytes with its terminating NUL. */
const MAX_SOCKET_PATH_BYTES = 107;

/**
 * Refuses a state dir so deep that a socket below it cannot be bound (the driver would exit with
 * `listen EINVAL`, the kubelet could not dial it): the kubelet fixes `<root>/plugins_registry`, the
 * driver `<driver-name>-reg.sock`, so only a shorter state dir helps.
 */
function assertSocketPaths(paths: readonly string[]): void {
  for (const path of paths) {
    const bytes = Buffer.byteLength(path);
    if (bytes > MAX_SOCKET_PATH_BYTES) {
      throw new ClusterStateError(`the socket ${path} would be ${bytes} bytes long, more than a unix socket path may be (${MAX_SOCKET_PATH_BYTES}): use a shorter state dir`);
    }
  }
}

/**
 * The longest socket path the cluster binds below its state dir: node kubelet-0's plugin
 * registration socket (`<state>/nodes/kubelet-0/plugins_registry/<driver>-reg.sock`).
 */
function longestSocketPath(state: string): string {
  return join(state, 'nodes', KUBELET_NODE, 'plugins_registry', `${DRIVER}-reg.sock`);
}

/**
 * The state dir to use for `preferred` (an absolute dir inside the checkout): `preferred` itself
 * when every socket below it fits a unix socket path, else a short dir in the temp directory named
 * after `name` and the checkout's path (`<tmp>/vs-<name>-<8 hex>`: stable for one checkout, so a
 * restart finds the same cluster; distinct for two checkouts). `moved` says which, so the caller
 * can say where the state went. A temp directory that is itself too deep still fails in
 * startCluster with the socket's path. `note` is the one line every caller prints when the state
 * moved (undefined when it did not).
 */
export function stateDirFor(preferred: string, name: string): { readonly dir: string; readonly moved: boolean; readonly note: string | undefined } {
  if (Buffer.byteLength(longestSocketPath(preferred)) <= MAX_SOCKET_PATH_BYTES) return { dir: preferred, moved: false, note: undefined };
  const tag = createHash('sha256').update(preferred).digest('hex').slice(0, 8);
  const dir = join(tmpdir(), `vs-${name}-${tag}`);
  return { dir, moved: true, note: `state in ${dir} (the checkout is too deep for the cluster's unix sockets below ${preferred})` };
}

/** Prepares the state dir (reset, build-key check) and returns the ports to use. */
async function prepareState(state: string, key: string, reset: boolean, say: (line: string) => void): Promise<SavedState['ports']> {
  const stateFile = join(state, 'state.json');
  if (reset && existsSync(state)) {
    const mounted = await findLeftoverMounts(state, []);
    if (mounted.length > 0) {
      throw new ClusterStateError(`--reset: ${mounted.length} mount(s) below ${state} (e.g. ${mounted[0]?.mountPoint ?? ''}); is another cluster running?`);
    }
    rmSync(state, { recursive: true, force: true });
    say(`--reset: removed ${state}`);
  }
  let saved: SavedState | undefined;
  if (existsSync(stateFile)) {
    saved = JSON.parse(readFileSync(stateFile, 'utf8')) as SavedState;
    if (saved.key !== key) {
      throw new ClusterStateError(
        `${state} was made with upstream build ${saved.key}, this is ${key} (other pins, build flags or Go toolchain): ` +
          'its etcd data and certificates are not reused across versions. Run `npm run cluster -- --reset` for a fresh cluster.',
      );
    }
    say(`reusing ${state}`);
  }
  const ports = await choosePorts(saved?.ports, say);
  mkdirSync(state, { recursive: true });
  writeFileSync(stateFile, `${JSON.stringify({ key, ports } satisfies SavedState, null, 2)}\n`);
  return ports;
}

/** Starts the cluster (see the file comment). */
export async function startCluster(options: StartClusterOptions): Promise<RunningCluster> {
  const say =
    options.log ??
    ((line: string) => {
      console.log(`cluster: ${line}`);
    });
  const { dir: buildDir, manifest } = await ensureUpstreamBuild();
  const bin = (name: string): string => join(buildDir, 'bin', name);
  say(`upstream build ${manifest.key}: ${manifest.binaries.map((b) => `${b.binary} ${b.version}`).join(', ')}`);

  const state = options.stateDir;
  const ports = await prepareState(state, manifest.key, options.reset === true, say);
  const pki: Pki = ensurePki(join(state, 'pki'), [ADMIN, CONTROLLER_MANAGER, nodeIdentity(NODE), nodeIdentity(KUBELET_NODE), SIDECARS]);
  const server = `https://${HOST}:${ports.apiserver}`;
  const kubeconfigOf = (id: ClientIdentity): string => {
    const file = join(state, `${id.file}.kubeconfig`);
    writeFileSync(file, kubeconfig(pki, server, id), { mode: 0o600 });
    return file;
  };
  const logs = join(state, 'logs');
  const csiDir = join(state, 'csi');
  const pkiPaths: PkiPaths = {
    dir: pki.dir,
    caCert: pki.caCert,
    caKey: pki.caKey,
    serverCert: pki.serverCert,
    serverKey: pki.serverKey,
    serviceAccountKey: pki.serviceAccountKey,
    serviceAccountPub: pki.serviceAccountPub,
    adminCert: pki.clientCert(ADMIN),
    adminKey: pki.clientKey(ADMIN),
  };
  const base = { stateDir: state, pki: pkiPaths, apiServerUrl: server, logsDir: logs };
  const agent = new ClusterAgent(await agentFacts(base, { nodeName: NODE, port: ports.agent, kubeconfig: kubeconfigOf(nodeIdentity(NODE)) }), options.agentArgs ?? [], options.agentBundle === undefined ? undefined : { path: options.agentBundle, compileCacheDir: join(state, 'node-compile-cache') }, options.agentNodeArgs ?? []);
  const kubeletCsiDir = join(csiDir, KUBELET_NODE);
  const kubeletFacts: KubeletFacts = {
    nodeName: KUBELET_NODE,
    rootDir: join(state, 'nodes', KUBELET_NODE),
    kubeconfig: kubeconfigOf(nodeIdentity(KUBELET_NODE)),
    logFile: join(logs, `kubelet-${KUBELET_NODE}.log`),
    csiSocket: join(kubeletCsiDir, 'csi.sock'),
    csiControlUrl: `http://${HOST}:${ports.kubeletCsiControl ?? (await freePort(HOST))}`,
    csiStateDir: join(csiDir, 'state'),
    csiLogFile: join(logs, `csi-driver-${KUBELET_NODE}.log`),
  };
  const facts: ClusterFacts = {
    ...base,
    buildDir,
    versions: manifest,
    adminKubeconfig: kubeconfigOf(ADMIN),
    csiSocket: join(csiDir, 'csi.sock'),
    csiControlUrl: `http://${HOST}:${ports.csiControl ?? (await freePort(HOST))}`,
    driverName: DRIVER,
    agent: agent.facts,
    kubelet: kubeletFacts,
  };

  const registrationSocket = (nodeRoot: string): string => join(nodeRoot, 'plugins_registry', `${DRIVER}-reg.sock`);
  assertSocketPaths([facts.csiSocket, kubeletFacts.csiSocket, registrationSocket(agent.facts.rootDir), registrationSocket(kubeletFacts.rootDir), longestSocketPath(state)]);

  const env = childEnv();
  const started: ManagedProcess[] = [];
  const startGo = (name: string, binary: string, args: readonly string[], cwd = state): ManagedProcess => {
    const p = ManagedProcess.start({ name, command: bin(binary), args, cwd, env, logFile: join(logs, `${name}.log`) });
    started.push(p);
    return p;
  };

  // Node kubelet-0's kubelet; a test may stop and start it again (RunningCluster.stopKubelet /
  // startKubelet), so the current process replaces the previous one in `started` (the stop below
  // stops whichever runs). The kubelet runs in an empty directory of its own: when it removes a
  // container, its log manager deletes every file matching `<log path>*` (kubernetes/kubernetes
  // pkg/kubelet/logs/container_log_manager.go@v1.34 Clean), and the fake CRI reports an empty log
  // path, so `*` is globbed in the working directory: run in the state dir, deleting a pod with a
  // started container removed admin.kubeconfig and the other kubeconfigs there.
  const kubeletCwd = join(kubeletFacts.rootDir, 'fake-cri-cwd');
  const startKubeletProcess = (): ManagedProcess => {
    const previous = started.findIndex((p) => p.name === KUBELET_PROCESS);
    if (previous >= 0) started.splice(previous, 1);
    return startGo(KUBELET_PROCESS, 'kubelet', [`--kubeconfig=${kubeletFacts.kubeconfig}`, `--node-name=${KUBELET_NODE}`, `--root-dir=${kubeletFacts.rootDir}`, '--v=2', ...(options.kubeletArgs ?? [])], kubeletCwd);
  };
  const currentKubelet = (): ManagedProcess | undefined => started.find((p) => p.name === KUBELET_PROCESS);

  let stopping: Promise<void> | null = null;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      say('stopping…');
      await Promise.all([agent.stop(), currentKubelet()?.stop(15_000)]);
      const nodesDir = join(state, 'nodes');
      const agentRoots = existsSync(nodesDir) ? readdirSync(nodesDir).map((n) => join(nodesDir, n)) : [];
      const leftovers = await findLeftoverMounts(state, agentRoots);
      if (leftovers.length > 0) {
        say(`unmounting ${leftovers.length} mount(s) the nodes left below ${state}…`);
        const report = await unmountLeftovers(leftovers);
        for (const f of report.failed) say(`could not unmount ${f.mountPoint}: ${f.error}`);
      }
      for (const n of ['csi-attacher', 'csi-provisioner', 'csi-resizer', KUBELET_CSI_PROCESS, 'csi-driver', 'kube-controller-manager', 'kube-apiserver', 'etcd']) {
        await started.find((p) => p.name === n)?.stop(10_000);
      }
      say('stopped');
    })());
  options.onStoppable?.(stop);

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
    await waitUntil('kube-apiserver /readyz', async () => (await apiGet(facts, '/readyz')).status === 200, { deadlineMs: 120_000, process: apiserver, intervalMs: 500 });
    say(`kube-apiserver ready at ${server}`);

    const applied = await kubectlRun(facts, ['apply', '-f', '-'], { input: manifests() });
    if (applied.code !== 0) throw new Error(`kubectl apply of the CSIDriver and StorageClass failed: ${applied.stderr.trim()}`);
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

    const nodeRoot = agent.facts.rootDir;
    mkdirSync(join(nodeRoot, 'plugins_registry'), { recursive: true });
    mkdirSync(csiDir, { recursive: true });
    const driver = ManagedProcess.start({
      name: 'csi-driver',
      args: ['--import', 'tsx', join(root, 'drivers', 'csi-loop', 'main.ts'), `--endpoint=unix://${facts.csiSocket}`, `--state-dir=${kubeletFacts.csiStateDir}`, `--driver-name=${DRIVER}`, `--node-id=${NODE}`, `--registration-dir=${join(nodeRoot, 'plugins_registry')}`, `--control=${new URL(facts.csiControlUrl).host}`],
      cwd: root,
      env,
      logFile: join(logs, 'csi-driver.log'),
    });
    started.push(driver);
    await waitUntil('the CSI driver socket', () => Promise.resolve(existsSync(facts.csiSocket)), { deadlineMs: 60_000, process: driver, intervalMs: 250 });
    const sidecars = kubeconfigOf(SIDECARS);
    for (const sidecar of ['csi-attacher', 'csi-provisioner', 'csi-resizer']) {
      startGo(sidecar, sidecar, [`--csi-address=${facts.csiSocket}`, `--kubeconfig=${sidecars}`, '--leader-election=false', '--timeout=15s']);
    }

    await agent.start();

    // Node kubelet-0's CSI node plugin: a second csi-loop process, serving the kubelet's plugin
    // registration itself (node-driver-registrar cannot be built here: the module proxy refuses
    // github.com/kubernetes-csi/node-driver-registrar). It shares the state dir of the instance
    // above (the sidecars' controller, node id agent-0), as a real driver's node plugins share its
    // backend: csi-loop's state store takes the dir's lock file and re-reads state.json around
    // every change (drivers/csi-loop/README.md, Several nodes), so the volumes the provisioner
    // creates and the attacher attaches to kubelet-0 are staged and published here.
    const kubeletRegistration = join(kubeletFacts.rootDir, 'plugins_registry');
    mkdirSync(kubeletRegistration, { recursive: true });
    mkdirSync(kubeletCsiDir, { recursive: true });
    const kubeletDriver = ManagedProcess.start({
      name: KUBELET_CSI_PROCESS,
      args: [
        '--import',
        'tsx',
        join(root, 'drivers', 'csi-loop', 'main.ts'),
        `--endpoint=unix://${kubeletFacts.csiSocket}`,
        `--state-dir=${kubeletFacts.csiStateDir}`,
        `--driver-name=${DRIVER}`,
        `--node-id=${KUBELET_NODE}`,
        `--registration-dir=${kubeletRegistration}`,
        `--control=${new URL(kubeletFacts.csiControlUrl).host}`,
      ],
      cwd: root,
      env,
      logFile: kubeletFacts.csiLogFile,
    });
    started.push(kubeletDriver);
    await waitUntil(`the CSI driver socket of ${KUBELET_NODE}`, () => Promise.resolve(existsSync(kubeletFacts.csiSocket)), { deadlineMs: 60_000, process: kubeletDriver, intervalMs: 250 });
    const kubeletStarted = performance.now();
    const kubeletStartedAt = Date.now();
    mkdirSync(kubeletCwd, { recursive: true });
    const kubelet = startKubeletProcess();

    if (options.waitForNodeReady ?? true) {
      const timeoutMs = options.nodeTimeoutMs ?? 60_000;
      const wait = async (nodeName: string, node: ClusterAgent | ManagedProcess, since: number, heartbeatSince?: number): Promise<void> => {
        try {
          await waitForNodeReady(facts, nodeName, timeoutMs, node, heartbeatSince);
          await waitForCsiDriver(facts, nodeName, DRIVER, timeoutMs, node);
          say(`node ${nodeName} Ready, ${DRIVER} registered, after ${((performance.now() - since) / 1000).toFixed(1)} s`);
        } catch (err) {
          // Said, not thrown: the tests that need the node fail with their own words.
          const proc = node instanceof ClusterAgent ? node.process : node;
          if (!isNodeNotReadyError(err) && !(isStartError(err) && proc?.exitInfo === null)) throw err;
          say(err.message);
        }
      };
      await Promise.all([wait(NODE, agent, performance.now()), wait(KUBELET_NODE, kubelet, kubeletStarted, kubeletStartedAt)]);
    }
    for (const p of [...started, ...(agent.process === null ? [] : [agent.process])]) {
      if (p.exitInfo !== null) say(`${p.name} exited (${p.exitInfo.signal ?? `code ${String(p.exitInfo.code)}`}); log ${p.options.logFile}:\n${await p.logTail(1500)}`);
    }
  } catch (err) {
    await stop();
    throw err;
  }

  if (currentKubelet() === undefined) throw new Error(`${KUBELET_PROCESS} was not started`);
  return {
    facts,
    agent,
    get kubelet(): ManagedProcess {
      const p = currentKubelet();
      if (p === undefined) throw new Error(`${KUBELET_PROCESS} was not started`);
      return p;
    },
    stopKubelet: async () => {
      const p = currentKubelet();
      if (p === undefined || p.exitInfo !== null) throw new Error(`${KUBELET_PROCESS} is not running`);
      const exit = await p.stop(15_000);
      appendFileSync(kubeletFacts.logFile, `\n--- cluster: ${KUBELET_PROCESS} stopped (${exit.signal ?? `code ${String(exit.code)}`}) ---\n`);
      return exit;
    },
    startKubelet: async (timeoutMs = 60_000) => {
      if (stopping !== null) throw new Error(`the cluster is stopping: ${KUBELET_PROCESS} is not started again`);
      if (currentKubelet()?.exitInfo === null) throw new Error(`${KUBELET_PROCESS} is running already`);
      appendFileSync(kubeletFacts.logFile, `\n--- cluster: ${KUBELET_PROCESS} starting again ---\n`);
      const startedAt = Date.now();
      const p = startKubeletProcess();
      // No node-lifecycle controller runs: the stopped kubelet's Node still says Ready, so only a
      // heartbeat written after this start counts.
      await waitForNodeReady(facts, KUBELET_NODE, timeoutMs, p, startedAt);
      await waitForCsiDriver(facts, KUBELET_NODE, DRIVER, timeoutMs, p);
    },
    kubectl: (args, kubectlOptions) => kubectl(facts, args, kubectlOptions),
    restartAgent: (restartOptions) => agent.restart(restartOptions),
    agentLog: () => agent.log(),
    waitForNodeReady: (timeoutMs) => waitForNodeReady(facts, NODE, timeoutMs, agent),
    stop,
  };
}
