/**
 * The engine's logging interface: a message (kubelet wording) plus structured fields. The agent
 * adapts it to pino; tests collect or discard lines.
 */
export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  /**
   * Whether `debug` lines are written at all. Callers on hot paths (a CSI call per volume and
   * stats pass) ask first so they build no fields for a line that is dropped; a logger without
   * it counts as enabled.
   */
  isDebugEnabled?(): boolean;
}

/** Whether `log` writes debug lines (see {@link Logger.isDebugEnabled}). */
export function debugEnabled(log: Logger): boolean {
  return log.isDebugEnabled?.() ?? true;
}

export const discardLogger: Logger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  isDebugEnabled: () => false,
};
