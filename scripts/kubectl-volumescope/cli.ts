/**
 * `kubectl volumescope`: runs one command line against the agents and returns its exit code.
 * Everything process-specific (stdout, environment, clock, the end of `--watch`) comes in
 * through {@link CliIo}, so tests run it in-process against real agents.
 */
import { readFile } from 'node:fs/promises';
import { stringify } from 'yaml';
import type { KubeConfig } from '@kubernetes/client-node';
import {
  createSseParser,
  decodeAgentStreamEvent,
  isAgentApiError,
  normalizeSnapshot,
  reduceAgentStream,
  parseSnapshot,
  API_ROUTES,
  type AgentApiError,
  type Snapshot,
} from '../../lib/api/index.ts';
import { loadClientNode, type ClientNode } from '../../lib/kube-client/client-node.ts';
import { findPod, deriveVolumeRows, type PodView } from '../../lib/dashboard/pipeline.ts';
import { directConnection, isAgentTlsError, isAgentUnreachableError, openAgentHttp, portForwardConnection, type AgentConnection } from './agent-transport.ts';
import { EXIT, isUsageError, parseCommandLine, type CommonOptions } from './cli-args.ts';
import { contextNamespace, findNodeAgent, isLookupError, loadUserKubeConfig, LookupError, readPod, userBearerToken } from './locate.ts';
import { COLOR_STYLE, nodeBlocked, nodeMarkdown, nodeReport, nodeText, PLAIN_STYLE, podBlocked, podMarkdown, podReport, podText, type Style } from './views.ts';

export interface CliIo {
  readonly stdout: { write(text: string): unknown; readonly isTTY?: boolean };
  readonly stderr: { write(text: string): unknown };
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly now: () => number;
  /** Ends `--watch` (SIGINT in the process). */
  readonly stop?: AbortSignal;
  /** Calls `fn` every `ms` (the live countdown on a TTY); returns the cancel. */
  readonly every?: (ms: number, fn: () => void) => () => void;
  readonly clientNode?: () => Promise<ClientNode>;
}

/** What one command needs of the agent: a connection and how to pick the subject from a snapshot. */
interface Target {
  readonly connection: AgentConnection;
  /** The node name as found (the snapshot's own name is used when the agent URL was given). */
  readonly node: string | null;
}

const PROG = 'kubectl volumescope';
/** `--watch`: the pause before reconnecting to an event stream that ended. */
const RECONNECT_DELAY_MS = 1_000;

function styleFor(io: CliIo, options: CommonOptions): Style {
  const noColor = (io.env['NO_COLOR'] ?? '') !== '';
  return options.color === 'never' || noColor || io.stdout.isTTY !== true ? PLAIN_STYLE : COLOR_STYLE;
}

/** The token to send: `--token` (or its variable), else `--token-file`'s, else the kubeconfig user's (`null` without a kubeconfig). */
async function tokenOf(options: CommonOptions, kc: KubeConfig | null): Promise<string | null> {
  if (options.token !== null) return options.token;
  if (options.tokenFile !== null) {
    try {
      return (await readFile(options.tokenFile, 'utf8')).trim();
    } catch (err) {
      throw new LookupError(`cannot read --token-file ${options.tokenFile}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  if (kc === null) return null;
  const token = await userBearerToken(kc);
  if (token === null) {
    throw new LookupError(
      `the kubeconfig user ${JSON.stringify(kc.getCurrentUser()?.name ?? '')} sends no bearer token (client certificates only?): the agent authenticates callers with a TokenReview, which needs a token; use a token user, or --token / --token-file`,
    );
  }
  return token;
}

/** Connects to the agent of `node` found through the kubeconfig, or to `--agent-url`. */
async function connect(options: CommonOptions, k8s: ClientNode | null, kc: KubeConfig | null, node: string | null): Promise<Target> {
  if (options.agentUrl !== null) {
    const token = await tokenOf(options, null);
    return { connection: directConnection({ node: node ?? options.agentUrl, url: options.agentUrl }, token, await openAgentHttp(options.agentScheme, options.agentTls)), node };
  }
  if (k8s === null || kc === null || node === null) throw new LookupError('no agent to ask');
  const endpoint = await findNodeAgent(k8s, kc, { namespace: options.agentNamespace, selector: options.agentSelector, defaultPort: options.agentPort, scheme: options.agentScheme }, node);
  const token = await tokenOf(options, kc);
  const http = await openAgentHttp(options.agentScheme, options.agentTls);
  try {
    const connection = options.transport === 'direct' ? directConnection(endpoint, token, http) : await portForwardConnection(k8s, kc, endpoint, token, http);
    return { connection, node };
  } catch (err) {
    await http.close();
    throw err;
  }
}

async function kube(io: CliIo, options: CommonOptions): Promise<{ k8s: ClientNode; kc: KubeConfig }> {
  const k8s = await (io.clientNode ?? loadClientNode)();
  return { k8s, kc: loadUserKubeConfig(k8s, io.env, options.kubeconfig, options.context) };
}

async function readSnapshot(connection: AgentConnection, signal?: AbortSignal): Promise<Snapshot> {
  const res = await connection.get(API_ROUTES.snapshot.path, signal === undefined ? {} : { signal });
  return normalizeSnapshot(parseSnapshot(await res.json()));
}

/** A rendering of one snapshot: the text to print and whether the subject is blocked. */
interface Frame {
  readonly text: string;
  readonly blocked: boolean;
}

/** Prints frames: once; or, with `--watch`, on every stream event (and every second on a TTY). */
async function present(io: CliIo, options: CommonOptions, connection: AgentConnection, render: (snapshot: Snapshot, now: number) => Frame): Promise<number> {
  if (!options.watch) {
    const frame = render(await readSnapshot(connection), io.now());
    io.stdout.write(frame.text);
    return frame.blocked ? EXIT.blocked : EXIT.healthy;
  }
  const tty = io.stdout.isTTY === true && (options.output === 'text' || options.output === 'markdown');
  let state: Snapshot | null = null;
  const shown: { last: Frame | null } = { last: null };
  let printed = '';
  const draw = (): void => {
    if (state === null) return;
    const frame = render(state, io.now());
    shown.last = frame;
    if (frame.text === printed) return;
    printed = frame.text;
    if (tty) io.stdout.write(`\u001b[H\u001b[2J${frame.text}`);
    else io.stdout.write(options.output === 'yaml' ? `---\n${frame.text}` : options.output === 'json' ? frame.text : `${frame.text}\n`);
  };
  const cancelTick = tty && io.every !== undefined ? io.every(1_000, draw) : () => undefined;
  const controller = new AbortController();
  const onStop = (): void => {
    controller.abort();
  };
  io.stop?.addEventListener('abort', onStop);
  try {
    while (!controller.signal.aborted) {
      const res = await connection.get(API_ROUTES.events.path, { signal: controller.signal, headers: { accept: 'text/event-stream' } }).catch((err: unknown) => {
        if (controller.signal.aborted) return null;
        throw err;
      });
      if (res === null || res.body === null) break;
      const parser = createSseParser((message) => {
        const event = decodeAgentStreamEvent(message);
        if (event === null) return;
        state = reduceAgentStream(state, event);
        draw();
      });
      const decoder = new TextDecoder();
      const reader = res.body.getReader();
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          parser.push(decoder.decode(value, { stream: true }));
        }
      } catch (err) {
        if (!controller.signal.aborted) throw err;
      }
      // The stream ended (the agent is shutting down): reconnect after a pause, and a new
      // snapshot replaces the state; an agent that stays away ends the watch (exit code 3).
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, RECONNECT_DELAY_MS);
        controller.signal.addEventListener('abort', () => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  } finally {
    cancelTick();
    io.stop?.removeEventListener('abort', onStop);
  }
  const final = shown.last;
  return final === null ? EXIT.unavailable : final.blocked ? EXIT.blocked : EXIT.healthy;
}

function serialize(options: CommonOptions, report: unknown): string {
  return options.output === 'yaml' ? stringify(report) : `${JSON.stringify(report, null, 2)}\n`;
}

/** The pod of `name` in a snapshot: by the UID the API server gave, else by namespace/name, else `name` as a UID. */
function pickPod(snapshot: Snapshot, uid: string | null, namespace: string | null, name: string): PodView | null {
  const rows = deriveVolumeRows(snapshot);
  if (uid !== null) return findPod(snapshot, uid, rows);
  const byName = snapshot.desired.pods.find((p) => p.name === name && (namespace === null || p.namespace === namespace));
  if (byName !== undefined) return findPod(snapshot, byName.uid, rows);
  return findPod(snapshot, name, rows);
}

async function runPod(io: CliIo, cmd: Extract<ReturnType<typeof parseCommandLine>, { kind: 'pod' }>): Promise<number> {
  const { options } = cmd;
  let namespace = cmd.namespace;
  let uid: string | null = null;
  let node = cmd.node;
  let k8s: ClientNode | null = null;
  let kc: KubeConfig | null = null;
  if (options.agentUrl === null) {
    ({ k8s, kc } = await kube(io, options));
    namespace ??= contextNamespace(kc);
    if (cmd.node === null) {
      const pod = await readPod(k8s, kc, namespace, cmd.name);
      if (pod === null) throw new LookupError(`pod ${namespace}/${cmd.name} not found; for a pod that is gone, give its UID and --node`);
      if (pod.node === null) {
        io.stdout.write(`Pod ${namespace}/${cmd.name} is not scheduled to a node yet: no volume manager works on it.\n`);
        return EXIT.blocked;
      }
      uid = pod.uid;
      node = pod.node;
    }
  }
  const target = await connect(options, k8s, kc, node);
  try {
    const style = styleFor(io, options);
    return await present(io, options, target.connection, (snapshot, now) => {
      const nodeName = target.node ?? snapshot.nodeName;
      const pod = pickPod(snapshot, uid, namespace, cmd.name);
      if (pod === null) {
        const text = `Pod ${namespace === null ? '' : `${namespace}/`}${cmd.name} is not known to the agent of node ${nodeName} (not in its desired world, no mounts, operations or errors).\n`;
        return { text: options.output === 'json' || options.output === 'yaml' ? serialize(options, { kind: 'PodVolumes', node: nodeName, found: false }) : text, blocked: true };
      }
      const text =
        options.output === 'markdown'
          ? podMarkdown(nodeName, pod, snapshot, now, options.dashboardUrl)
          : options.output === 'text'
            ? podText(nodeName, pod, snapshot, now, style)
            : serialize(options, podReport(nodeName, pod, snapshot));
      return { text, blocked: podBlocked(pod) };
    });
  } finally {
    await target.connection.close();
  }
}

async function runNode(io: CliIo, cmd: Extract<ReturnType<typeof parseCommandLine>, { kind: 'node' }>): Promise<number> {
  const { options } = cmd;
  const { k8s, kc } = options.agentUrl === null ? await kube(io, options) : { k8s: null, kc: null };
  const target = await connect(options, k8s, kc, cmd.name);
  try {
    const style = styleFor(io, options);
    return await present(io, options, target.connection, (snapshot, now) => {
      const text =
        options.output === 'markdown' ? nodeMarkdown(snapshot, now, options.dashboardUrl) : options.output === 'text' ? nodeText(snapshot, now, style) : serialize(options, nodeReport(snapshot));
      return { text, blocked: nodeBlocked(snapshot) };
    });
  } finally {
    await target.connection.close();
  }
}

/** The message of an agent's refusal, naming what the user's RBAC needs. */
function refusal(err: AgentApiError): string {
  if (err.status === 403) {
    return `the agent refused your credentials: ${err.message}. Reading an agent needs "get" on nodes/volumemanager (resourceName: the node), e.g. the ClusterRole volumescope-viewer of deploy/base/user-rbac.yaml`;
  }
  if (err.status === 401) {
    return `the agent did not accept your credentials (TokenReview): ${err.message}. Agents run with --authentication-token-audience accept only tokens for that audience (deploy/: kubectl create token SA --audience volumescope-agent, then --token)`;
  }
  return `the agent answered ${err.status}: ${err.message}`;
}

/** Runs `kubectl volumescope <argv…>` and returns the exit code. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  let cmd: ReturnType<typeof parseCommandLine>;
  try {
    cmd = parseCommandLine(argv, io.env);
  } catch (err) {
    if (!isUsageError(err)) throw err;
    io.stderr.write(`${PROG}: ${err.message}\nRun "${PROG} --help" for usage.\n`);
    return EXIT.usage;
  }
  if (cmd.kind === 'help') {
    io.stdout.write(cmd.text);
    return EXIT.healthy;
  }
  try {
    return cmd.kind === 'pod' ? await runPod(io, cmd) : await runNode(io, cmd);
  } catch (err) {
    if (isLookupError(err) || isAgentUnreachableError(err) || isAgentTlsError(err)) io.stderr.write(`${PROG}: ${err.message}\n`);
    else if (isAgentApiError(err)) io.stderr.write(`${PROG}: ${refusal(err)}\n`);
    else throw err;
    return EXIT.unavailable;
  }
}
