/**
 * The logging interface sources accept: the subset of pino's API they use (`logger.warn(obj, msg)`),
 * so a pino logger or child logger can be passed as is, and tests can pass a recorder.
 */
export interface SourceLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** Discards everything; the default when no logger is given. */
export const silentLogger: SourceLogger = {
  info: () => undefined,
  warn: () => undefined,
};
