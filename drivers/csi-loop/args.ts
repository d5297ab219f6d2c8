/**
 * Command-line flags of `npm run csi-driver`. Parsing is strict: an unknown flag, a missing value
 * or an invalid value is a UsageError naming the flag (main.ts exits 2 with it).
 */
import os from 'node:os';
import type { RequestedMode } from './mode.ts';
import { DEFAULT_DRIVER_NAME } from './driver.ts';

export interface CliOptions {
  socketPath: string;
  stateDir: string;
  controlPort: number | undefined;
  driverName: string;
  nodeId: string;
  mode: RequestedMode;
  registrationDir: string | undefined;
  strict: boolean;
  /** `all` (default): one log line per CSI call; `failed`: only failed calls (the call log keeps every call). */
  logCalls: LogCalls;
}

export type LogCalls = 'all' | 'failed';

export type ParsedArgs = { kind: 'help' } | { kind: 'run'; options: CliOptions };

export class UsageError extends Error {
  override readonly name = 'UsageError';

  constructor(
    readonly flag: string,
    message: string,
  ) {
    super(`${flag}: ${message}`);
  }
}

export function isUsageError(err: unknown): err is UsageError {
  return err instanceof UsageError;
}

export const USAGE = `Usage: npm run csi-driver -- --endpoint unix://<path> --state-dir <dir> [flags]

A CSI driver (csi.v1 Identity, Controller, Node) backed by sparse images on loop devices
(privileged mode) or by plain directories (unprivileged mode), for VolumeScope tests and demos.

Flags:
  --endpoint unix://<path>     CSI socket to serve (default: $CSI_ENDPOINT)        [required]
  --state-dir <dir>            where images/disks and state.json live               [required]
  --control 127.0.0.1:<port>   control HTTP endpoint (faults, call log, state, detach); also <port>
  --driver-name <name>         CSI driver name (default ${DEFAULT_DRIVER_NAME})
  --node-id <id>               node id for NodeGetInfo and attachments (default: hostname)
  --mode privileged|unprivileged|auto
                               auto (default): privileged only as root outside PID 1's mount
                               namespace where a test tmpfs mount works (logged with the reason)
  --registration-dir <dir>     also serve kubelet plugin registration on <dir>/<name>-reg.sock
  --strict                     no volume or node comes into being by ControllerPublishVolume: an
                               unknown volume id or a node other than --node-id is NOT_FOUND (as the
                               CSI spec and csi-sanity ask); default: both are created on first use
  --log-calls all|failed       all (default): one JSON log line per CSI call; failed: only failed
                               calls are logged (the control API's call log keeps every call)
  --help                       show this text
`;

const VALUE_FLAGS = ['--endpoint', '--state-dir', '--control', '--driver-name', '--node-id', '--mode', '--registration-dir', '--log-calls'] as const;
type ValueFlag = (typeof VALUE_FLAGS)[number];

function isValueFlag(flag: string): flag is ValueFlag {
  return (VALUE_FLAGS as readonly string[]).includes(flag);
}

/** Flags without a value. */
const SWITCH_FLAGS = ['--strict'] as const;
type SwitchFlag = (typeof SWITCH_FLAGS)[number];

function isSwitchFlag(flag: string): flag is SwitchFlag {
  return (SWITCH_FLAGS as readonly string[]).includes(flag);
}

export function parseArgs(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): ParsedArgs {
  const values = new Map<ValueFlag, string>();
  const switches = new Set<SwitchFlag>();
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i] ?? '';
    if (arg === '--help' || arg === '-h') {
      return { kind: 'help' };
    }
    if (isSwitchFlag(arg)) {
      switches.add(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const flag = arg.startsWith('--') && eq > 0 ? arg.slice(0, eq) : arg;
    if (isSwitchFlag(flag)) {
      throw new UsageError(flag, 'takes no value');
    }
    if (!isValueFlag(flag)) {
      throw new UsageError(flag, 'unknown flag');
    }
    let value: string | undefined;
    if (flag !== arg) {
      value = arg.slice(eq + 1);
    } else {
      value = argv[i + 1];
      i += 1;
    }
    if (value === undefined || value === '' || (flag === arg && value.startsWith('--'))) {
      throw new UsageError(flag, 'needs a value');
    }
    values.set(flag, value);
  }

  const endpoint = values.get('--endpoint') ?? env.CSI_ENDPOINT;
  if (endpoint === undefined || endpoint === '') {
    throw new UsageError('--endpoint', 'is required (or set CSI_ENDPOINT)');
  }
  const stateDir = values.get('--state-dir');
  if (stateDir === undefined) {
    throw new UsageError('--state-dir', 'is required');
  }
  const mode = values.get('--mode') ?? 'auto';
  if (mode !== 'privileged' && mode !== 'unprivileged' && mode !== 'auto') {
    throw new UsageError('--mode', `must be privileged, unprivileged or auto, got ${JSON.stringify(mode)}`);
  }
  const logCalls = values.get('--log-calls') ?? 'all';
  if (logCalls !== 'all' && logCalls !== 'failed') {
    throw new UsageError('--log-calls', `must be all or failed, got ${JSON.stringify(logCalls)}`);
  }
  const control = values.get('--control');
  return {
    kind: 'run',
    options: {
      socketPath: socketPathOf(endpoint),
      stateDir,
      controlPort: control === undefined ? undefined : controlPortOf(control),
      driverName: values.get('--driver-name') ?? DEFAULT_DRIVER_NAME,
      nodeId: values.get('--node-id') ?? os.hostname(),
      mode,
      registrationDir: values.get('--registration-dir'),
      strict: switches.has('--strict'),
      logCalls,
    },
  };
}

/** `unix:///abs/path`, `unix:/abs/path` or `unix://rel/path` → the socket path. */
export function socketPathOf(endpoint: string): string {
  const match = /^unix:(?:\/\/)?(.+)$/.exec(endpoint);
  const socketPath = match?.[1];
  if (socketPath === undefined || socketPath === '') {
    throw new UsageError('--endpoint', `must be unix://<path>, got ${JSON.stringify(endpoint)}`);
  }
  return socketPath;
}

/** `127.0.0.1:<port>`, `localhost:<port>` or `<port>`; any other host is refused (loopback only). */
export function controlPortOf(value: string): number {
  const match = /^(?:(127\.0\.0\.1|localhost):)?([0-9]{1,5})$/.exec(value);
  const port = Number(match?.[2]);
  if (match === null || !Number.isInteger(port) || port > 65535) {
    throw new UsageError('--control', `must be 127.0.0.1:<port> (loopback only), got ${JSON.stringify(value)}`);
  }
  return port;
}
