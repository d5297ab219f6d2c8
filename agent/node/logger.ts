/**
 * Logging of the agent process: pino JSON lines on stdout. The engine logs through its own
 * `Logger` interface (a kubelet-worded message plus fields); {@link engineLogger} adapts it to
 * pino, so one line is `{"level":30,"time":…,"node":"node-a","msg":"MountVolume.SetUp succeeded
 * for volume …",…fields}`. Field names that pino reserves (`level`, `time`, `msg`, `pid`,
 * `hostname`) are moved under `fields` rather than overwriting pino's own. The message and every
 * string field are cut to `MESSAGE_LENGTH_LIMIT` (`truncateMessage`, with a visible marker): a
 * driver's error text must not make log lines megabytes long.
 */
import { pino, type DestinationStream, type Logger as PinoLogger } from 'pino';
import { truncateMessage } from '../../lib/truncate-message.ts';
import type { Logger } from '../../lib/volume/logger.ts';
import type { LogLevel } from './flags.ts';

export type AgentLogger = PinoLogger;

/** A pino logger for the agent; `destination` defaults to stdout (tests pass a stream). */
export function createAgentLogger(opts: { level: LogLevel; nodeName: string; destination?: DestinationStream }): AgentLogger {
  const options = { level: opts.level, base: { pid: process.pid, node: opts.nodeName } };
  return opts.destination === undefined ? pino(options) : pino(options, opts.destination);
}

const reserved = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'node']);

/** The engine's Logger over pino (optionally a child with a `component` field). */
export function engineLogger(log: AgentLogger, component?: string): Logger {
  const target = component === undefined ? log : log.child({ component });
  const fieldsOf = (fields: Record<string, unknown> | undefined): Record<string, unknown> => {
    if (fields === undefined) return {};
    const bounded = Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, typeof v === 'string' ? truncateMessage(v) : v]));
    const clash = Object.keys(bounded).some((k) => reserved.has(k));
    return clash ? { fields: bounded } : bounded;
  };
  return {
    debug: (msg, fields) => {
      if (target.isLevelEnabled('debug')) target.debug(fieldsOf(fields), truncateMessage(msg));
    },
    info: (msg, fields) => {
      target.info(fieldsOf(fields), truncateMessage(msg));
    },
    warn: (msg, fields) => {
      target.warn(fieldsOf(fields), truncateMessage(msg));
    },
    error: (msg, fields) => {
      target.error(fieldsOf(fields), truncateMessage(msg));
    },
    isDebugEnabled: () => target.isLevelEnabled('debug'),
  };
}
