/**
 * The node agent's command line (`npm run agent -- [flags]`), parsed with `node:util` parseArgs.
 *
 * Contract: {@link parseAgentFlags} either returns a complete, validated {@link AgentConfig} (every
 * default filled in, paths absolute) or throws a {@link FlagError} that names the offending flag;
 * `agent/main.ts` turns the latter into exit code 2. Nothing here touches the disk: checks that
 * need it (the manifest dir exists, the token file is readable) happen at start and report the
 * flag the same way.
 */
import { isIP } from 'node:net';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { isInvalidCsiDriverFlagError, parseCsiDriverFlag } from '../../lib/volume/csi/index.ts';
import { formatGoDuration } from '../../lib/volume/util/go-format.ts';
import { isInvalidDurationError, parseDuration } from './duration.ts';
import { errorMessage } from '../../lib/volume/errors.ts';

/** A flag value that cannot be used; `flag` is the flag as typed (`--listen`). Exit code 2. */
export class FlagError extends Error {
  override readonly name = 'FlagError';
  constructor(
    readonly flag: string,
    message: string,
  ) {
    super(message);
  }
}

export function isFlagError(err: unknown): err is FlagError {
  return err instanceof FlagError;
}

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
const logLevels: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export interface ListenAddress {
  host: string;
  /** 0 asks the OS for a free port (the agent logs the one it got). */
  port: number;
}

export interface CsiDriverFlag {
  name: string;
  /** `unix:///path/to/csi.sock`. */
  endpoint: string;
}

/** Everything the agent process is configured with; see {@link flagSpecs} for meanings. */
export interface AgentConfig {
  nodeName: string;
  /** Absolute kubelet root dir (`pods/`, `plugins/`, `plugins_registry/` below it). */
  rootDir: string;
  /** Absolute manifest directory. */
  manifestDir: string;
  /** False when the manifest dir is the default one, which the agent may create. */
  manifestDirGiven: boolean;
  listen: ListenAddress;
  /** HTTPS for the API (`--tls-cert-file`, `--tls-private-key-file`); absent: plain HTTP. */
  tls?: TlsFilesConfig;
  /** Absolute path of the bearer token file. */
  tokenFile: string;
  reconcilePeriodMs: number;
  controllerAttachDetach: boolean;
  csiDrivers: CsiDriverFlag[];
  attachVerifyPeriodMs: number;
  /** `--mount-health-period`: one batch of mount health checks per period; 0 = off. Absent = the default (10 s). */
  mountHealthPeriodMs?: number;
  /** `--mount-health-timeout`: a check with no answer within it is `hung`. Absent = the default (5 s). */
  mountHealthTimeoutMs?: number;
  /**
   * Deadline of every CSI call (`--csi-timeout`); absent = the CSI client's default (2 min, the
   * kubelet's csiTimeout). Optional so configs built without the flag keep their shape.
   */
  csiTimeoutMs?: number;
  /**
   * `--volume-stats-agg-period`: period of the volume stats passes (NodeGetVolumeStats, statfs),
   * each 1–2 periods after the previous one (the kubelet's jitter); 0 disables them. Absent = 1m,
   * the kubelet's default.
   */
  volumeStatsAggPeriodMs?: number;
  /**
   * Deadline of every request to the API server (`--kube-request-timeout`): informer lists and
   * the GETs of claims and other referenced objects; an expired GET fails like any API error.
   * Absent = the source's default (1 min).
   */
  kubeRequestTimeoutMs?: number;
  allowMount: boolean;
  shutdownGracePeriodMs: number;
  logLevel: LogLevel;
  /**
   * `managed`: the agent is the node's volume manager (mounts, unmounts, attaches when
   * controller attach/detach is off). `observe`: a real kubelet manages volumes; the agent only
   * reads its root dir and mountinfo and plans (never mutates, except the opt-in orphan cleanup).
   */
  mode: AgentMode;
  /** Where pods and objects come from; `kubernetes` when `--kubeconfig`, in-cluster or `--mode=observe`. */
  source: 'manifest' | 'kubernetes';
  /** Absolute kubeconfig path (`--kubeconfig`); absent = `KUBECONFIG`, then in-cluster. */
  kubeconfig?: string;
  /** mountinfo file the observe mode reads (the host's, e.g. `/proc/1/mountinfo` in a hostPID pod). */
  mountinfoPath: string;
  /** Observe mode: period of the actual-state refresh from disk and mountinfo. */
  observeRefreshPeriodMs: number;
  /** Observe mode: allows the guarded cleanup of orphaned pod directories (off by default). */
  allowOrphanCleanup: boolean;
  /** Kubernetes source: period of the `node.status.volumesInUse` report (the kubelet's `--node-status-update-frequency`). */
  nodeStatusUpdateFrequencyMs: number;
  /**
   * `--sync-frequency` (the kubelet's, default 1m): every pod is synced again at this period — its
   * volumes processed anew (claims and PVs fetched again, so an expanded PV reaches the node
   * expansion path; remountable volumes set up again) — besides the syncs that source changes start.
   */
  syncFrequencyMs: number;
  /**
   * `--register-node` (kubernetes source, managed mode): the agent is the node's kubelet towards
   * the API server (agent/node/node-registration.ts). Off by default, unlike the kubelet's flag:
   * the DaemonSet deployment runs the agent next to a real kubelet, whose Node it must not touch.
   * Optional so configs built without the flag keep their shape.
   */
  registerNode?: boolean;
  /** `--node-ip`: the InternalIP the registered node reports; default 127.0.0.1. */
  nodeIp?: string;
  auth: AuthConfig;
}

export type AgentMode = 'managed' | 'observe';

/** The kubelet's webhook authentication/authorization flags, applied to the agent API. */
export interface AuthConfig {
  /** Bearer tokens other than the static token are checked with a TokenReview. */
  tokenWebhook: boolean;
  tokenWebhookCacheTtlMs: number;
  /** `Webhook`: every authenticated request is authorized with a SubjectAccessReview on `nodes/volumemanager`. */
  authorizationMode: 'AlwaysAllow' | 'Webhook';
  authorizedTtlMs: number;
  unauthorizedTtlMs: number;
  /**
   * `--authentication-token-audience`: the audiences a reviewed token must be valid for
   * (TokenReview `spec.audiences`); empty: the API server's own. Optional so configs built
   * without the flag keep their shape.
   */
  tokenAudiences?: string[];
}

/** `--tls-cert-file` and `--tls-private-key-file` (absolute paths): the API is served over HTTPS. */
export interface TlsFilesConfig {
  certFile: string;
  keyFile: string;
}

/** What `--help` prints per flag; the order is the help order. */
interface FlagSpec {
  name: string;
  type: 'string' | 'boolean';
  multiple?: boolean;
  value?: string;
  default: string;
  help: string;
}

const defaultListen = '127.0.0.1:7070';
const defaultReconcilePeriodMs = 100;
const defaultAttachVerifyPeriodMs = 60_000;
const defaultShutdownGracePeriodMs = 10_000;
/** The kubelet's `--node-status-update-frequency` default. */
const defaultNodeStatusUpdateFrequencyMs = 10_000;
/** The kubelet's `syncFrequency` default (pkg/kubelet/apis/config/v1beta1/defaults.go@v1.34). */
const defaultSyncFrequencyMs = 60_000;
const defaultObserveRefreshPeriodMs = 10_000;
/** The kubelet's defaults for `--authentication-token-webhook-cache-ttl` and the authorization cache TTLs. */
const defaultTokenWebhookCacheTtlMs = 120_000;
const defaultAuthorizedTtlMs = 300_000;
const defaultUnauthorizedTtlMs = 30_000;
const defaultMountinfoPath = '/proc/self/mountinfo';
/** The kubelet's `--root-dir` default: observe mode's default root dir. */
const defaultKubeletRootDir = '/var/lib/kubelet';

export const flagSpecs: readonly FlagSpec[] = [
  { name: 'mode', type: 'string', value: 'managed|observe', default: 'managed', help: 'managed: this agent is the volume manager of the node; observe: a kubelet manages volumes and the agent reads its root dir read-only and lists what it still has to do' },
  { name: 'source', type: 'string', value: 'auto|manifest|kubernetes', default: 'auto: kubernetes with --kubeconfig, --mode=observe or inside a pod (KUBERNETES_SERVICE_HOST), else manifest', help: 'where pods and objects come from' },
  { name: 'kubeconfig', type: 'string', value: 'path', default: 'KUBECONFIG, then the in-cluster service account', help: 'kubeconfig of the API server (implies --source=kubernetes)' },
  { name: 'node-name', type: 'string', value: 'name', default: 'the host name, lower-cased', help: "this node's name (a DNS-1123 subdomain); mixed into derived pod uids" },
  { name: 'root-dir', type: 'string', value: 'dir', default: `./.volumescope/<node-name> (observe mode: ${defaultKubeletRootDir})`, help: 'the kubelet root dir: pods/, plugins/ and plugins_registry/ live below it' },
  { name: 'manifest-dir', type: 'string', value: 'dir', default: '<root-dir>/manifests, created if missing', help: 'directory of Pod/PV/PVC/ConfigMap/Secret/CSIDriver manifests (the standalone object source)' },
  { name: 'listen', type: 'string', value: 'host:port', default: defaultListen, help: 'address of the HTTP API; port 0 picks a free port' },
  { name: 'token-file', type: 'string', value: 'path', default: '<root-dir>/agent-token (observe mode: ./.volumescope/<node-name>/agent-token)', help: 'bearer token of the HTTP API; created (mode 0600, 32 random bytes as hex) if missing' },
  { name: 'reconcile-period', type: 'string', value: 'duration', default: formatGoDuration(defaultReconcilePeriodMs), help: 'period of the reconciler loop; the desired-state populator runs on every manifest change and otherwise every max(this, 1s)' },
  { name: 'controller-attach-detach', type: 'boolean', default: 'true with the kubernetes source, false with manifests', help: 'volumes are attached by the attach/detach controller, not by this agent (=true|false)' },
  {
    name: 'register-node',
    type: 'boolean',
    default: 'false',
    help: 'kubernetes source, managed mode: be the node as a kubelet is: create the Node, keep it Ready (status, kube-node-lease Lease), publish the CSINode and delete terminated pods; only where no kubelet runs (=true|false)',
  },
  { name: 'node-ip', type: 'string', value: 'ip', default: '127.0.0.1', help: 'with --register-node: the node\'s InternalIP address' },
  { name: 'node-status-update-frequency', type: 'string', value: 'duration', default: formatGoDuration(defaultNodeStatusUpdateFrequencyMs), help: 'kubernetes source, managed mode: period of the node.status.volumesInUse report (it is also sent on every change)' },
  { name: 'sync-frequency', type: 'string', value: 'duration', default: formatGoDuration(defaultSyncFrequencyMs), help: 'period of the sync of every pod: its volumes are processed again (claims and PVs fetched anew, remountable volumes set up again)' },
  { name: 'csi-driver', type: 'string', multiple: true, value: 'name=socket', default: 'none', help: 'a CSI driver at a unix socket path (repeatable); drivers may also register through <root-dir>/plugins_registry' },
  { name: 'attach-verify-period', type: 'string', value: 'duration', default: formatGoDuration(defaultAttachVerifyPeriodMs), help: 'period of the batched check that attached volumes are still attached; 0 disables it' },
  { name: 'mount-health-period', type: 'string', value: 'duration', default: '10s', help: 'one batch (at most 250 paths, least recently checked first) of statfs/stat health checks of pod volume and staging paths per period, in a child process; 0 disables them' },
  { name: 'mount-health-timeout', type: 'string', value: 'duration', default: '5s', help: 'a mount health check with no answer within it is hung (its child process is killed)' },
  { name: 'csi-timeout', type: 'string', value: 'duration', default: '2m', help: 'deadline of every CSI call; an expired call leaves the volume uncertain' },
  { name: 'volume-stats-agg-period', type: 'string', value: 'duration', default: '1m', help: 'period of the volume usage passes (CSI NodeGetVolumeStats, statfs of other volumes) for the snapshot and kubelet_volume_stats_*; each pass starts 1 to 2 periods after the previous one ends (the kubelet\'s jitter); 0 disables them' },
  { name: 'kube-request-timeout', type: 'string', value: 'duration', default: '1m', help: 'kubernetes source: deadline of every list and GET sent to the API server; an expired GET fails like an API error (a pod whose claim cannot be read keeps its mounts)' },
  { name: 'allow-mount', type: 'boolean', default: 'true', help: 'probe for real mounts; false always uses the unprivileged mounter (=true|false)' },
  { name: 'mountinfo', type: 'string', value: 'path', default: defaultMountinfoPath, help: "observe mode: the host's mountinfo (e.g. /proc/1/mountinfo with hostPID)" },
  { name: 'observe-refresh-period', type: 'string', value: 'duration', default: formatGoDuration(defaultObserveRefreshPeriodMs), help: 'observe mode: how often the actual state is rebuilt from the kubelet root dir and mountinfo' },
  { name: 'allow-orphan-cleanup', type: 'boolean', default: 'false', help: 'observe mode: allow the guarded cleanup of orphaned pod directories (unmount, then remove empty directories); needs --allow-mount and a --mountinfo that shows the --root-dir mounts' },
  { name: 'authentication-token-webhook', type: 'boolean', default: 'false', help: 'accept bearer tokens validated by a TokenReview (the static token keeps working)' },
  { name: 'authentication-token-webhook-cache-ttl', type: 'string', value: 'duration', default: formatGoDuration(defaultTokenWebhookCacheTtlMs), help: 'how long TokenReview results are cached' },
  { name: 'authentication-token-audience', type: 'string', multiple: true, value: 'audience', default: '', help: 'with --authentication-token-webhook: a reviewed token must be valid for this audience (TokenReview spec.audiences; repeatable); a token for another audience gets 401' },
  { name: 'tls-cert-file', type: 'string', value: 'path', default: '', help: 'serve the API over HTTPS with this certificate (PEM, chain after the leaf), as the kubelet; needs --tls-private-key-file' },
  { name: 'tls-private-key-file', type: 'string', value: 'path', default: '', help: 'the private key (PEM) of --tls-cert-file' },
  { name: 'authorization-mode', type: 'string', value: 'AlwaysAllow|Webhook', default: 'AlwaysAllow', help: 'Webhook: authorize each caller with a SubjectAccessReview (verb get for reads, update for actions, on nodes/volumemanager of this node)' },
  { name: 'authorization-webhook-cache-authorized-ttl', type: 'string', value: 'duration', default: formatGoDuration(defaultAuthorizedTtlMs), help: 'how long an allowed SubjectAccessReview is cached' },
  { name: 'authorization-webhook-cache-unauthorized-ttl', type: 'string', value: 'duration', default: formatGoDuration(defaultUnauthorizedTtlMs), help: 'how long a denied SubjectAccessReview is cached' },
  { name: 'shutdown-grace-period', type: 'string', value: 'duration', default: formatGoDuration(defaultShutdownGracePeriodMs), help: 'on SIGTERM/SIGINT, how long running operations may take to finish' },
  { name: 'log-level', type: 'string', value: 'level', default: 'info', help: `pino log level: ${logLevels.join(', ')}` },
  { name: 'help', type: 'boolean', default: '', help: 'print this help and exit' },
];

const booleanFlags = new Set(flagSpecs.filter((f) => f.type === 'boolean').map((f) => f.name));

/** The `--help` text. */
export function helpText(): string {
  const rows = flagSpecs.map((f) => {
    const left = `  --${f.name}${f.value === undefined ? '' : ` <${f.value}>`}`;
    const def = f.default === '' ? '' : ` (default: ${f.default})`;
    return { left, right: `${f.help}${def}` };
  });
  const width = Math.max(...rows.map((r) => r.left.length)) + 2;
  return [
    'VolumeScope node agent: runs the volume manager for one node and serves its state over HTTP.',
    '',
    'Usage: npm run agent -- [flags]',
    '',
    'Flags:',
    ...rows.map((r) => `${r.left.padEnd(width)}${r.right}`),
    '',
    'Durations: 100ms, 60s, 2m, 1m30s. Exit codes: 0 after SIGTERM/SIGINT, 1 on a start failure, 2 on a bad flag.',
    '',
  ].join('\n');
}

/** The parse result: either help was asked for, or a configuration. */
export type ParsedFlags = { help: true } | { help: false; config: AgentConfig };

export interface FlagDefaults {
  /** Default for `--node-name`. */
  hostname: string;
  /** Directory relative defaults resolve against. */
  cwd: string;
  /** True inside a pod (`KUBERNETES_SERVICE_HOST` is set): `--source=auto` picks kubernetes. */
  inCluster?: boolean;
}

/** Parses argv (without node and script); throws {@link FlagError}. */
export function parseAgentFlags(argv: readonly string[], defaults: FlagDefaults = { hostname: hostname(), cwd: process.cwd(), inCluster: (process.env['KUBERNETES_SERVICE_HOST'] ?? '') !== '' }): ParsedFlags {
  const args = normaliseBooleans(argv);
  let values;
  try {
    ({ values } = parseArgs({
      args,
      options: Object.fromEntries(flagSpecs.map((f) => [f.name, { type: f.type, ...(f.multiple === true ? { multiple: true } : {}) }])),
      allowNegative: true,
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    const message = errorMessage(err);
    const flag = /'(-[^' ]+)/.exec(message)?.[1] ?? /'([^']+)'/.exec(message)?.[1] ?? 'arguments';
    throw new FlagError(flag, message);
  }
  if (values['help'] === true) return { help: true };
  const str = (name: string): string | undefined => {
    const v = values[name];
    return typeof v === 'string' ? v : undefined;
  };
  const bool = (name: string, fallback: boolean): boolean => {
    const v = values[name];
    return typeof v === 'boolean' ? v : fallback;
  };
  const list = (name: string): string[] => {
    const v = values[name];
    return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
  };

  const nodeName = validNodeName(str('node-name') ?? defaults.hostname.toLowerCase(), str('node-name') !== undefined);
  const modeFlag = str('mode');
  // Observe mode reads the kubelet's own root dir unless told otherwise.
  const rootDir = resolve(defaults.cwd, nonEmpty('--root-dir', str('root-dir')) ?? (modeFlag === 'observe' ? defaultKubeletRootDir : join('.volumescope', nodeName)));
  const manifestFlag = nonEmpty('--manifest-dir', str('manifest-dir'));
  const tokenFlag = nonEmpty('--token-file', str('token-file'));
  const reconcilePeriodMs = duration('--reconcile-period', str('reconcile-period'), defaultReconcilePeriodMs);
  if (reconcilePeriodMs <= 0) throw new FlagError('--reconcile-period', `--reconcile-period: must be greater than 0, got ${JSON.stringify(str('reconcile-period'))}`);
  const csiTimeoutFlag = str('csi-timeout');
  const csiTimeoutMs = csiTimeoutFlag === undefined ? undefined : duration('--csi-timeout', csiTimeoutFlag, 0);
  if (csiTimeoutMs !== undefined && csiTimeoutMs <= 0) throw new FlagError('--csi-timeout', `--csi-timeout: must be greater than 0, got ${JSON.stringify(csiTimeoutFlag)}`);
  const kubeTimeoutFlag = str('kube-request-timeout');
  const kubeRequestTimeoutMs = kubeTimeoutFlag === undefined ? undefined : duration('--kube-request-timeout', kubeTimeoutFlag, 0);
  if (kubeRequestTimeoutMs !== undefined && kubeRequestTimeoutMs <= 0) {
    throw new FlagError('--kube-request-timeout', `--kube-request-timeout: must be greater than 0, got ${JSON.stringify(kubeTimeoutFlag)}`);
  }

  const mode = oneOf('--mode', modeFlag ?? 'managed', ['managed', 'observe'] as const);
  const kubeconfigFlag = nonEmpty('--kubeconfig', str('kubeconfig'));
  const sourceFlag = oneOf('--source', str('source') ?? 'auto', ['auto', 'manifest', 'kubernetes'] as const);
  let source: AgentConfig['source'];
  if (sourceFlag === 'auto') {
    source = kubeconfigFlag !== undefined || mode === 'observe' || defaults.inCluster === true ? 'kubernetes' : 'manifest';
  } else {
    source = sourceFlag;
  }
  if (source === 'manifest' && kubeconfigFlag !== undefined) throw new FlagError('--kubeconfig', '--kubeconfig: cannot be used with --source=manifest');
  if (source === 'manifest' && mode === 'observe') throw new FlagError('--mode', '--mode=observe: needs the kubernetes source (the pods come from the API server); drop --source=manifest');
  const nodeStatusUpdateFrequencyMs = duration('--node-status-update-frequency', str('node-status-update-frequency'), defaultNodeStatusUpdateFrequencyMs);
  if (nodeStatusUpdateFrequencyMs <= 0) throw new FlagError('--node-status-update-frequency', '--node-status-update-frequency: must be greater than 0');
  const syncFrequencyMs = duration('--sync-frequency', str('sync-frequency'), defaultSyncFrequencyMs);
  if (syncFrequencyMs <= 0) throw new FlagError('--sync-frequency', `--sync-frequency: must be greater than 0, got ${JSON.stringify(str('sync-frequency'))}`);
  const observeRefreshPeriodMs = duration('--observe-refresh-period', str('observe-refresh-period'), defaultObserveRefreshPeriodMs);
  if (observeRefreshPeriodMs <= 0) throw new FlagError('--observe-refresh-period', '--observe-refresh-period: must be greater than 0');
  const allowOrphanCleanup = bool('allow-orphan-cleanup', false);
  if (allowOrphanCleanup && mode !== 'observe') {
    throw new FlagError('--allow-orphan-cleanup', '--allow-orphan-cleanup: only applies to --mode=observe (in managed mode the agent cleans up orphaned pod directories itself, as the kubelet does)');
  }
  const allowMount = bool('allow-mount', true);
  if (allowOrphanCleanup && !allowMount) {
    // The cleanup decides what is mounted from the kernel's table and unmounts with umount(8);
    // with --allow-mount=false the agent reads a stand-in table, so a kubelet's mounts would be invisible.
    throw new FlagError(
      '--allow-orphan-cleanup',
      '--allow-orphan-cleanup: cannot be used with --allow-mount=false (the cleanup must read the real mount table given by --mountinfo and unmount for real; with --allow-mount=false the agent reads a stand-in table)',
    );
  }
  const registerNode = bool('register-node', false);
  if (registerNode && (source !== 'kubernetes' || mode !== 'managed')) {
    throw new FlagError('--register-node', '--register-node: needs --mode=managed and the kubernetes source (the node registers with the API server)');
  }
  const nodeIp = nonEmpty('--node-ip', str('node-ip')) ?? '127.0.0.1';
  if (isIP(nodeIp) === 0) throw new FlagError('--node-ip', `--node-ip: ${JSON.stringify(nodeIp)} is not an IP address`);
  const authorizationMode = oneOf('--authorization-mode', str('authorization-mode') ?? 'AlwaysAllow', ['AlwaysAllow', 'Webhook'] as const);
  const tokenWebhook = bool('authentication-token-webhook', false);
  if (authorizationMode === 'Webhook' && !tokenWebhook) {
    // The static token skips every review, so there would be nobody to authorize.
    throw new FlagError('--authorization-mode', '--authorization-mode=Webhook: needs --authentication-token-webhook (the static token is never reviewed)');
  }
  const tokenAudiences = list('authentication-token-audience').map((a) => a.trim());
  if (tokenAudiences.some((a) => a === '')) throw new FlagError('--authentication-token-audience', '--authentication-token-audience: must not be empty');
  if (tokenAudiences.length > 0 && !tokenWebhook) {
    throw new FlagError('--authentication-token-audience', '--authentication-token-audience: needs --authentication-token-webhook (only reviewed tokens have an audience)');
  }
  const tlsCert = nonEmpty('--tls-cert-file', str('tls-cert-file'));
  const tlsKey = nonEmpty('--tls-private-key-file', str('tls-private-key-file'));
  if ((tlsCert === undefined) !== (tlsKey === undefined)) {
    const flag = tlsCert === undefined ? '--tls-private-key-file' : '--tls-cert-file';
    throw new FlagError(flag, `${flag}: needs ${tlsCert === undefined ? '--tls-cert-file' : '--tls-private-key-file'} too`);
  }
  if ((tokenWebhook || authorizationMode === 'Webhook') && source !== 'kubernetes') {
    const flag = tokenWebhook ? '--authentication-token-webhook' : '--authorization-mode';
    throw new FlagError(flag, `${flag}: needs the kubernetes source (TokenReview and SubjectAccessReview go to the API server)`);
  }

  return {
    help: false,
    config: {
      mode,
      source,
      ...(kubeconfigFlag === undefined ? {} : { kubeconfig: resolve(defaults.cwd, kubeconfigFlag) }),
      mountinfoPath: resolve(defaults.cwd, nonEmpty('--mountinfo', str('mountinfo')) ?? defaultMountinfoPath),
      observeRefreshPeriodMs,
      allowOrphanCleanup,
      nodeStatusUpdateFrequencyMs,
      syncFrequencyMs,
      registerNode,
      nodeIp,
      auth: {
        tokenWebhook,
        tokenWebhookCacheTtlMs: duration('--authentication-token-webhook-cache-ttl', str('authentication-token-webhook-cache-ttl'), defaultTokenWebhookCacheTtlMs),
        authorizationMode,
        authorizedTtlMs: duration('--authorization-webhook-cache-authorized-ttl', str('authorization-webhook-cache-authorized-ttl'), defaultAuthorizedTtlMs),
        unauthorizedTtlMs: duration('--authorization-webhook-cache-unauthorized-ttl', str('authorization-webhook-cache-unauthorized-ttl'), defaultUnauthorizedTtlMs),
        ...(tokenAudiences.length === 0 ? {} : { tokenAudiences }),
      },
      ...(tlsCert === undefined || tlsKey === undefined ? {} : { tls: { certFile: resolve(defaults.cwd, tlsCert), keyFile: resolve(defaults.cwd, tlsKey) } }),
      nodeName,
      rootDir,
      manifestDir: manifestFlag === undefined ? join(rootDir, 'manifests') : resolve(defaults.cwd, manifestFlag),
      manifestDirGiven: manifestFlag !== undefined,
      listen: parseListen(str('listen') ?? defaultListen),
      // Observe mode never writes below the kubelet's root dir: its default token lives in the working directory.
      tokenFile: tokenFlag === undefined ? (mode === 'observe' ? resolve(defaults.cwd, '.volumescope', nodeName, 'agent-token') : join(rootDir, 'agent-token')) : resolve(defaults.cwd, tokenFlag),
      reconcilePeriodMs,
      controllerAttachDetach: bool('controller-attach-detach', source === 'kubernetes'),
      csiDrivers: uniqueCsiDrivers(list('csi-driver').map(csiDriver)),
      attachVerifyPeriodMs: duration('--attach-verify-period', str('attach-verify-period'), defaultAttachVerifyPeriodMs),
      mountHealthPeriodMs: duration('--mount-health-period', str('mount-health-period'), 10_000),
      mountHealthTimeoutMs: duration('--mount-health-timeout', str('mount-health-timeout'), 5_000),
      ...(csiTimeoutMs === undefined ? {} : { csiTimeoutMs }),
      volumeStatsAggPeriodMs: duration('--volume-stats-agg-period', str('volume-stats-agg-period'), 60_000),
      ...(kubeRequestTimeoutMs === undefined ? {} : { kubeRequestTimeoutMs }),
      allowMount,
      shutdownGracePeriodMs: duration('--shutdown-grace-period', str('shutdown-grace-period'), defaultShutdownGracePeriodMs),
      logLevel: logLevel(str('log-level') ?? 'info'),
    },
  };
}

/**
 * parseArgs booleans take no value; accept `--flag=true|false` too (the kubelet's form) by
 * rewriting it to `--flag` / `--no-flag`.
 */
function normaliseBooleans(argv: readonly string[]): string[] {
  return argv.map((arg) => {
    const m = /^--([a-z-]+)=(.*)$/.exec(arg);
    const [, name, value] = m ?? [];
    if (name === undefined || value === undefined || !booleanFlags.has(name)) return arg;
    if (value === 'true' || value === '1') return `--${name}`;
    if (value === 'false' || value === '0') return `--no-${name}`;
    throw new FlagError(`--${name}`, `--${name}: expected true or false, got ${JSON.stringify(value)}`);
  });
}

function oneOf<const T extends string>(flag: string, value: string, allowed: readonly T[]): T {
  const match = allowed.find((a) => a === value);
  if (match === undefined) throw new FlagError(flag, `${flag}: ${JSON.stringify(value)} is not one of ${allowed.join(', ')}`);
  return match;
}

function nonEmpty(flag: string, value: string | undefined): string | undefined {
  if (value !== undefined && value.trim() === '') throw new FlagError(flag, `${flag}: must not be empty`);
  return value;
}

function duration(flag: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  try {
    return parseDuration(value);
  } catch (err) {
    if (isInvalidDurationError(err)) throw new FlagError(flag, `${flag}: ${err.message}`);
    throw err;
  }
}

const dns1123Subdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function validNodeName(name: string, given: boolean): string {
  if (name.length <= 253 && dns1123Subdomain.test(name)) return name;
  const what = given ? JSON.stringify(name) : `${JSON.stringify(name)} (the host name; pass --node-name)`;
  throw new FlagError('--node-name', `--node-name: ${what} is not a valid node name (a DNS-1123 subdomain: lower-case letters, digits, '-' and '.')`);
}

/** `host:port`, `[ipv6]:port`. */
function parseListen(value: string): ListenAddress {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(value.trim());
  const host = m?.[1] ?? m?.[2];
  const port = Number(m?.[3]);
  if (m === null || host === undefined || !Number.isInteger(port) || port > 65535) {
    throw new FlagError('--listen', `--listen: ${JSON.stringify(value)} is not <host>:<port> (e.g. ${defaultListen}, [::1]:7070, 0.0.0.0:0)`);
  }
  return { host, port };
}

function csiDriver(value: string): CsiDriverFlag {
  try {
    return parseCsiDriverFlag(value);
  } catch (err) {
    if (isInvalidCsiDriverFlagError(err)) throw new FlagError('--csi-driver', err.message);
    throw err;
  }
}

/** One endpoint per driver name: a second `--csi-driver` for a name would silently replace the first. */
function uniqueCsiDrivers(drivers: CsiDriverFlag[]): CsiDriverFlag[] {
  const seen = new Map<string, string>();
  for (const d of drivers) {
    const first = seen.get(d.name);
    if (first !== undefined) throw new FlagError('--csi-driver', `--csi-driver: ${d.name} is given twice (${first} and ${d.endpoint})`);
    seen.set(d.name, d.endpoint);
  }
  return drivers;
}

function logLevel(value: string): LogLevel {
  const level = logLevels.find((l) => l === value);
  if (level === undefined) throw new FlagError('--log-level', `--log-level: ${JSON.stringify(value)} is not one of ${logLevels.join(', ')}`);
  return level;
}
