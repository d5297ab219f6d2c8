/**
 * The command line of `kubectl volumescope`: commands, flags, help texts and the usage errors
 * (exit code 2). kubectl passes a plugin every argument after its name unchanged.
 */
import { parseArgs } from 'node:util';
import { DEFAULT_AGENT_PORT, DEFAULT_DISCOVERY_NAMESPACE, DEFAULT_DISCOVERY_SELECTOR } from '../../lib/dashboard/discovery-settings.ts';
import { AGENT_CA_FILE_ENV, AGENT_TLS_SERVER_NAME_ENV } from '../../lib/dashboard/agent-transport.ts';
import { AGENT_SCHEMES, TRANSPORT_KINDS, type AgentScheme, type AgentTlsSettings, type TransportKind } from './agent-transport.ts';

/** The environment variable with a bearer token to send (as `--token`). */
export const AGENT_TOKEN_ENV = 'VOLUMESCOPE_AGENT_TOKEN';

/** Exit codes scripts can rely on. */
export const EXIT = {
  /** Every volume of the pod is ready / the node is healthy. */
  healthy: 0,
  /** Some volume is not ready / the node is degraded or syncing. */
  blocked: 1,
  /** The command line is wrong. */
  usage: 2,
  /** The answer could not be had: not found, not allowed (401/403), agent unreachable. */
  unavailable: 3,
} as const;

export type OutputFormat = 'text' | 'markdown' | 'json' | 'yaml';
const OUTPUT_FORMATS: readonly OutputFormat[] = ['text', 'markdown', 'json', 'yaml'];

/** A wrong command line; printed with a pointer to `--help`, exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** True for a {@link UsageError}. */
export function isUsageError(err: unknown): err is UsageError {
  return err instanceof UsageError;
}

export interface CommonOptions {
  readonly output: OutputFormat;
  readonly watch: boolean;
  readonly color: 'auto' | 'never';
  readonly kubeconfig: string | null;
  readonly context: string | null;
  readonly agentNamespace: string;
  readonly agentSelector: string;
  readonly agentPort: number;
  readonly transport: TransportKind;
  /** An agent URL instead of discovery (a standalone agent, or a port-forward of your own). */
  readonly agentUrl: string | null;
  /**
   * `--agent-scheme`: how discovered agents are spoken to (default `https` with a CA file, else
   * `http`); with `--agent-url`, that URL's scheme.
   */
  readonly agentScheme: AgentScheme;
  /** `--agent-ca-file` (else `VOLUMESCOPE_AGENT_CA_FILE`) and `--agent-tls-server-name` (else `VOLUMESCOPE_AGENT_TLS_SERVER_NAME`). */
  readonly agentTls: AgentTlsSettings;
  /** A file with the bearer token to send instead of the kubeconfig user's. */
  readonly tokenFile: string | null;
  /** `--token` (else `VOLUMESCOPE_AGENT_TOKEN`): the bearer token to send instead of the kubeconfig user's. */
  readonly token: string | null;
  /** The VolumeScope dashboard's public URL: links in `-o markdown`. */
  readonly dashboardUrl: string | null;
}

export type Command =
  | { readonly kind: 'help'; readonly text: string }
  | { readonly kind: 'pod'; readonly name: string; readonly namespace: string | null; readonly node: string | null; readonly options: CommonOptions }
  | { readonly kind: 'node'; readonly name: string; readonly options: CommonOptions };

const COMMON_HELP = `Options:
  -o, --output=text|markdown|json|yaml
                            Output format (default text). json and yaml print the
                            agent API's own shapes (docs/api.md).
  -w, --watch               Keep following the agent's event stream; the next retry
                            counts down live. Ctrl-C ends it (exit code of the last state).
      --no-color            No colours (also when NO_COLOR is set or output is no TTY).
      --kubeconfig=PATH     Kubeconfig (default $KUBECONFIG, else ~/.kube/config).
      --context=NAME        Kubeconfig context (default the current one).
      --transport=port-forward|direct
                            How to reach the agent (default port-forward: through the
                            API server as kubectl port-forward, needs pods/portforward in
                            the agents' namespace); direct: the agent pod's IP.
      --agent-namespace=NS  Where the agent pods run (default ${DEFAULT_DISCOVERY_NAMESPACE}).
      --agent-selector=SEL  Label selector of the agent pods
                            (default ${DEFAULT_DISCOVERY_SELECTOR}).
      --agent-port=PORT     Agent port when the pod names none "api" (default ${DEFAULT_AGENT_PORT}).
      --agent-url=URL       Talk to this agent instead of discovering it (a standalone
                            agent, or a port-forward of your own).
      --agent-scheme=http|https
                            How the agents serve their API (default https when a CA
                            file is given, else http; --agent-url's own scheme wins).
      --agent-ca-file=PATH  Verify the agents' TLS certificates with this CA bundle (PEM;
                            default $${AGENT_CA_FILE_ENV}; without one, the system's CAs).
                            Verification is never turned off; a failure exits 3.
      --agent-tls-server-name=NAME
                            The name the agents' certificate must be valid for instead of
                            the address dialled (default $${AGENT_TLS_SERVER_NAME_ENV});
                            deploy/'s agents share one for volumescope-agent.volumescope.svc.
      --token=TOKEN         Send this bearer token instead of your kubeconfig's (default
                            $${AGENT_TOKEN_ENV}), e.g. one for deploy/'s agents' audience:
                            kubectl create token SA --audience volumescope-agent.
      --token-file=PATH     Send the bearer token in this file instead of your kubeconfig's.
      --dashboard-url=URL   The VolumeScope dashboard: links in -o markdown.
  -h, --help                This help.

Your own credentials are sent to the agent, which checks them with a TokenReview and a
SubjectAccessReview: reading needs "get" on nodes/volumemanager of the node (ClusterRole
volumescope-viewer of deploy/base/user-rbac.yaml). deploy/'s agents accept only tokens for
the audience volumescope-agent (--authentication-token-audience): pass one with --token.

Exit codes: 0 healthy, 1 blocked (a volume not ready, a node not healthy), 2 usage error,
3 no answer (not found, not allowed, agent unreachable).`;

export const MAIN_HELP = `kubectl volumescope: why is this pod stuck on its volumes? Asks the VolumeScope agent
of the pod's node.

Usage:
  kubectl volumescope pod NAME [-n NAMESPACE] [--watch] [-o text|markdown|json|yaml]
  kubectl volumescope node NAME [--watch] [-o text|markdown|json|yaml]

Commands:
  pod    The mount pipeline of each volume of a pod, its first blocking stage, the error
         verbatim and the next retry, and the kubelet-style summary line.
  node   A node's counts, pending operations with their backoff, the reconstruction
         result and, in observe mode, the kubelet's outstanding work and orphaned pod
         directories.

Run "kubectl volumescope COMMAND --help" for a command's options.
`;

export const POD_HELP = `kubectl volumescope pod NAME: the mount pipeline of each of the pod's volumes.

Finds the pod's node through your kubeconfig, the node's VolumeScope agent as the dashboard
finds it (the Running agent pod on that node), and prints per volume the stages
(in desired world → reported in use → attached → device mounted → mounted into pod → ready),
the first blocking stage, the operation's error verbatim and the next retry, then the
kubelet's "unmounted volumes=[…], unattached volumes=[…]" line.

Usage:
  kubectl volumescope pod NAME [-n NAMESPACE] [flags]
  kubectl volumescope pod UID --node NODE     (a pod that is gone from the API server)

Examples:
  kubectl volumescope pod web-0 -n shop
  kubectl volumescope pod web-0 -n shop --watch
  kubectl volumescope pod web-0 -n shop -o markdown --dashboard-url=https://volumescope.example.com

Pod options:
  -n, --namespace=NS        The pod's namespace (default the context's, else default).
      --node=NODE           Ask this node's agent without reading the pod from the API
                            server; NAME may then be the pod's UID.

${COMMON_HELP}
`;

export const NODE_HELP = `kubectl volumescope node NAME: a node's volume manager at a glance.

Prints the node's health and counts (pods, desired volumes, mounted, uncertain, pending,
in backoff, errors), the pending operations with their backoff and error, the
reconstruction result after the agent's last start, and in observe mode the kubelet's
outstanding work and the orphaned pod directories.

Usage:
  kubectl volumescope node NAME [flags]

Examples:
  kubectl volumescope node worker-3
  kubectl volumescope node worker-3 -o json | jq .summary.counts

${COMMON_HELP}
`;

const FLAG_SPECS = {
  output: { type: 'string', short: 'o' },
  watch: { type: 'boolean', short: 'w' },
  'no-color': { type: 'boolean' },
  kubeconfig: { type: 'string' },
  context: { type: 'string' },
  transport: { type: 'string' },
  'agent-namespace': { type: 'string' },
  'agent-selector': { type: 'string' },
  'agent-port': { type: 'string' },
  'agent-url': { type: 'string' },
  'token-file': { type: 'string' },
  token: { type: 'string' },
  'agent-scheme': { type: 'string' },
  'agent-ca-file': { type: 'string' },
  'agent-tls-server-name': { type: 'string' },
  'dashboard-url': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  namespace: { type: 'string', short: 'n' },
  node: { type: 'string' },
} as const;

function oneOf<T extends string>(flag: string, value: string | undefined, allowed: readonly T[], fallback: T): T {
  if (value === undefined) return fallback;
  const found = allowed.find((a) => a === value);
  if (found === undefined) throw new UsageError(`--${flag} must be one of ${allowed.join(', ')}, got ${JSON.stringify(value)}`);
  return found;
}

function nonEmpty(flag: string, value: string | undefined): string | null {
  if (value === undefined) return null;
  if (value.trim() === '') throw new UsageError(`--${flag} must not be empty`);
  return value;
}

function url(flag: string, value: string | undefined): string | null {
  const v = nonEmpty(flag, value);
  if (v === null) return null;
  let parsed: URL;
  try {
    parsed = new URL(v);
  } catch {
    throw new UsageError(`--${flag} must be an http(s) URL, got ${JSON.stringify(v)}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new UsageError(`--${flag} must be an http(s) URL, got ${JSON.stringify(v)}`);
  return v.replace(/\/+$/, '');
}

/** A flag's value, else a non-empty environment variable's (`null` when neither is set). */
function flagOrEnv(flag: string, value: string | undefined, env: Readonly<Record<string, string | undefined>>, name: string): string | null {
  if (value !== undefined) return nonEmpty(flag, value);
  const fromEnv = env[name]?.trim() ?? '';
  return fromEnv === '' ? null : fromEnv;
}

/**
 * Parses the arguments after `kubectl volumescope`; `env` gives the defaults of `--agent-ca-file`,
 * `--agent-tls-server-name` and `--token`. Throws a {@link UsageError}.
 */
export function parseCommandLine(argv: readonly string[], env: Readonly<Record<string, string | undefined>> = {}): Command {
  let parsed: ReturnType<typeof parseArgs<{ options: typeof FLAG_SPECS; allowPositionals: true; strict: true }>>;
  try {
    parsed = parseArgs({ args: [...argv], options: FLAG_SPECS, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
  const { values, positionals } = parsed;
  const [command, name, ...extra] = positionals;
  if (command === undefined) {
    if (values.help === true) return { kind: 'help', text: MAIN_HELP };
    throw new UsageError('a command is required: pod or node');
  }
  if (command === 'help') return { kind: 'help', text: name === 'pod' ? POD_HELP : name === 'node' ? NODE_HELP : MAIN_HELP };
  if (command !== 'pod' && command !== 'node') throw new UsageError(`unknown command ${JSON.stringify(command)}: use pod or node`);
  if (values.help === true) return { kind: 'help', text: command === 'pod' ? POD_HELP : NODE_HELP };
  if (name === undefined || name === '') throw new UsageError(`${command} needs a name: kubectl volumescope ${command} NAME`);
  if (extra.length > 0) throw new UsageError(`unexpected arguments: ${extra.join(' ')}`);
  if (command === 'node' && (values.namespace !== undefined || values.node !== undefined)) {
    throw new UsageError(`${values.namespace !== undefined ? '--namespace' : '--node'} is an option of the pod command`);
  }
  const portText = values['agent-port'];
  const agentPort = portText === undefined ? DEFAULT_AGENT_PORT : Number(portText);
  if (!Number.isInteger(agentPort) || agentPort < 1 || agentPort > 65535) throw new UsageError(`--agent-port must be a port number, got ${JSON.stringify(portText)}`);
  const agentUrl = url('agent-url', values['agent-url']);
  const caFile = flagOrEnv('agent-ca-file', values['agent-ca-file'], env, AGENT_CA_FILE_ENV);
  const serverName = flagOrEnv('agent-tls-server-name', values['agent-tls-server-name'], env, AGENT_TLS_SERVER_NAME_ENV);
  const schemeFlag = values['agent-scheme'] === undefined ? null : oneOf('agent-scheme', values['agent-scheme'], AGENT_SCHEMES, 'http');
  const urlScheme: AgentScheme | null = agentUrl === null ? null : agentUrl.startsWith('https:') ? 'https' : 'http';
  if (schemeFlag !== null && urlScheme !== null && schemeFlag !== urlScheme) throw new UsageError(`--agent-scheme=${schemeFlag} contradicts --agent-url ${agentUrl ?? ''}`);
  const agentScheme = urlScheme ?? schemeFlag ?? (caFile === null ? 'http' : 'https');
  if (agentScheme === 'https' && caFile === null && serverName !== null) {
    throw new UsageError(`--agent-tls-server-name (or ${AGENT_TLS_SERVER_NAME_ENV}) needs --agent-ca-file (or ${AGENT_CA_FILE_ENV}): the system's CAs are checked for the address dialled`);
  }
  if (values.token !== undefined && values['token-file'] !== undefined) throw new UsageError('--token and --token-file exclude each other');
  const token = values['token-file'] === undefined ? flagOrEnv('token', values.token, env, AGENT_TOKEN_ENV) : null;
  const options: CommonOptions = {
    output: oneOf('output', values.output, OUTPUT_FORMATS, 'text'),
    watch: values.watch === true,
    color: values['no-color'] === true ? 'never' : 'auto',
    kubeconfig: nonEmpty('kubeconfig', values.kubeconfig),
    context: nonEmpty('context', values.context),
    agentNamespace: nonEmpty('agent-namespace', values['agent-namespace']) ?? DEFAULT_DISCOVERY_NAMESPACE,
    agentSelector: nonEmpty('agent-selector', values['agent-selector']) ?? DEFAULT_DISCOVERY_SELECTOR,
    agentPort,
    transport: oneOf('transport', values.transport, TRANSPORT_KINDS, 'port-forward'),
    agentUrl,
    agentScheme,
    agentTls: { caFile, serverName },
    tokenFile: nonEmpty('token-file', values['token-file']),
    token: token?.trim() ?? null,
    dashboardUrl: url('dashboard-url', values['dashboard-url']),
  };
  if (command === 'node') return { kind: 'node', name, options };
  return { kind: 'pod', name, namespace: nonEmpty('namespace', values.namespace), node: nonEmpty('node', values.node), options };
}
