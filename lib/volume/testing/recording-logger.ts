/** Test support: a {@link Logger} that keeps every line, for assertions on log lines. */
import type { Logger } from '../logger.ts';

/** One logged line; `fields` is `{}` when none were given. */
export interface LogLine {
  level: 'debug' | 'info' | 'warn' | 'error';
  msg: string;
  fields: Record<string, unknown>;
}

export class RecordingLogger implements Logger {
  readonly lines: LogLine[] = [];

  debug(msg: string, fields: Record<string, unknown> = {}): void {
    this.lines.push({ level: 'debug', msg, fields });
  }

  info(msg: string, fields: Record<string, unknown> = {}): void {
    this.lines.push({ level: 'info', msg, fields });
  }

  warn(msg: string, fields: Record<string, unknown> = {}): void {
    this.lines.push({ level: 'warn', msg, fields });
  }

  error(msg: string, fields: Record<string, unknown> = {}): void {
    this.lines.push({ level: 'error', msg, fields });
  }

  /** The `warn` lines, in order. */
  warnings(): LogLine[] {
    return this.lines.filter((l) => l.level === 'warn');
  }
}
