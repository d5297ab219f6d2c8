/**
 * The node agent's command line (`npm run agent -- [flags]`), parsed with `node:util` parseArgs.
 *
 * Contract: {@link parseAgentFlags} either returns a complete, validated {@link AgentConfig} (every
 * default filled in, paths absolute) or throws a {@link FlagError} that names the offending flag;
 * `agent/main.ts` turns the latter into exit code 2. Nothing here touches the disk: checks that
 * need it (the manifest dir exists, the token file is readable) happen at start and report the
 * flag the same way.
 */
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { isInvalidCsiDriverFlagError, parseCsiDriverFlag } from '../../lib/volume/csi/index.ts';
import { formatDuration, isInvalidDurationError, parseDuration } from './duration.ts';

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
  /** Absolute path of the bearer token file. */
  tokenFile: string;
  reconcilePeriodMs: number;
  controllerAttachDetach: boolean;
  csiDrivers: CsiDriverFlag[];
  attachVerifyPeriodMs: number;
  /**
   * Deadline of every CSI call (`--csi-timeout`); absent = the CSI client's default (2 min, the
   * kubelet's csiTimeout). Optional so configs built without the flag keep their shape.
   */
  csiTimeoutMs?: number;
  allowMount: boolean;
  shutdownGracePeriodMs: number;
  logLevel: LogLevel;
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

export const defaultListen = '127.0.0.1:7070';
export const defaultReconcilePeriodMs = 100;
export const defaultAttachVerifyPeriodMs = 60_000;
export const defaultShutdownGracePeriodMs = 10_000;

export const flagSpecs: readonly FlagSpec[] = [
  { name: 'node-name', type: 'string', value: 'name', default: 'the host name, lower-cased', help: "this node's name (a DNS-1123 subdomain); mixed into derived pod uids" },
  { name: 'root-dir', type: 'string', value: 'dir', default: './.volumescope/<node-name>', help: 'the kubelet root dir: pods/, plugins/ and plugins_registry/ live below it' },
  { name: 'manifest-dir', type: 'string', value: 'dir', default: '<root-dir>/manifests, created if missing', help: 'directory of Pod/PV/PVC/ConfigMap/Secret/CSIDriver manifests (the standalone object source)' },
  { name: 'listen', type: 'string', value: 'host:port', default: defaultListen, help: 'address of the HTTP API; port 0 picks a free port' },
  { name: 'token-file', type: 'string', value: 'path', default: '<root-dir>/agent-token', help: 'bearer token of the HTTP API; created (mode 0600, 32 random bytes as hex) if missing' },
  { name: 'reconcile-period', type: 'string', value: 'duration', default: formatDuration(defaultReconcilePeriodMs), help: 'period of the reconciler loop; the desired-state populator runs on every manifest change and otherwise every max(this, 1s)' },
  { name: 'controller-attach-detach', type: 'boolean', default: 'false', help: 'volumes are attached by a controller, not by this agent (=true|false)' },
  { name: 'csi-driver', type: 'string', multiple: true, value: 'name=socket', default: 'none', help: 'a CSI driver at a unix socket path (repeatable); drivers may also register through <root-dir>/plugins_registry' },
  { name: 'attach-verify-period', type: 'string', value: 'duration', default: formatDuration(defaultAttachVerifyPeriodMs), help: 'period of the batched check that attached volumes are still attached; 0 disables it' },
  { name: 'csi-timeout', type: 'string', value: 'duration', default: '2m', help: 'deadline of every CSI call; an expired call leaves the volume uncertain' },
  { name: 'allow-mount', type: 'boolean', default: 'true', help: 'probe for real mounts; false always uses the unprivileged mounter (=true|false)' },
  { name: 'shutdown-grace-period', type: 'string', value: 'duration', default: formatDuration(defaultShutdownGracePeriodMs), help: 'on SIGTERM/SIGINT, how long running operations may take to finish' },
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
}

/** Parses argv (without node and script); throws {@link FlagError}. */
export function parseAgentFlags(argv: readonly string[], defaults: FlagDefaults = { hostname: hostname(), cwd: process.cwd() }): ParsedFlags {
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
    const message = err instanceof Error ? err.message : String(err);
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
  const rootDir = resolve(defaults.cwd, nonEmpty('--root-dir', str('root-dir')) ?? join('.volumescope', nodeName));
  const manifestFlag = nonEmpty('--manifest-dir', str('manifest-dir'));
  const tokenFlag = nonEmpty('--token-file', str('token-file'));
  const reconcilePeriodMs = duration('--reconcile-period', str('reconcile-period'), defaultReconcilePeriodMs);
  if (reconcilePeriodMs <= 0) throw new FlagError('--reconcile-period', `--reconcile-period: must be greater than 0, got ${JSON.stringify(str('reconcile-period'))}`);
  const csiTimeoutFlag = str('csi-timeout');
  const csiTimeoutMs = csiTimeoutFlag === undefined ? undefined : duration('--csi-timeout', csiTimeoutFlag, 0);
  if (csiTimeoutMs !== undefined && csiTimeoutMs <= 0) throw new FlagError('--csi-timeout', `--csi-timeout: must be greater than 0, got ${JSON.stringify(csiTimeoutFlag)}`);

  return {
    help: false,
    config: {
      nodeName,
      rootDir,
      manifestDir: manifestFlag === undefined ? join(rootDir, 'manifests') : resolve(defaults.cwd, manifestFlag),
      manifestDirGiven: manifestFlag !== undefined,
      listen: parseListen(str('listen') ?? defaultListen),
      tokenFile: tokenFlag === undefined ? join(rootDir, 'agent-token') : resolve(defaults.cwd, tokenFlag),
      reconcilePeriodMs,
      controllerAttachDetach: bool('controller-attach-detach', false),
      csiDrivers: list('csi-driver').map(csiDriver),
      attachVerifyPeriodMs: duration('--attach-verify-period', str('attach-verify-period'), defaultAttachVerifyPeriodMs),
      ...(csiTimeoutMs === undefined ? {} : { csiTimeoutMs }),
      allowMount: bool('allow-mount', true),
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
export function parseListen(value: string): ListenAddress {
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

function logLevel(value: string): LogLevel {
  const level = logLevels.find((l) => l === value);
  if (level === undefined) throw new FlagError('--log-level', `--log-level: ${JSON.stringify(value)} is not one of ${logLevels.join(', ')}`);
  return level;
}
