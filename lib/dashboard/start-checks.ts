/**
 * The dashboard's checks at `next start` (instrumentation.ts, Node.js runtime only): settings
 * every request needs, so a malformed one stops the server at start (exit code 1) with a message
 * naming the bad entry instead of a server that answers 500. Next only logs an error thrown from
 * `register()` and keeps serving, hence the explicit exit. Server-only.
 */
import { CORS_ORIGINS_ENV, isCorsOriginsConfigError, parseCorsOrigins } from './auth/cross-origin-reads.ts';

/** Checks `env`; on a malformed setting prints it and exits with 1. */
export function checkSettingsAtStart(env: Readonly<Record<string, string | undefined>> = process.env): void {
  try {
    parseCorsOrigins(env[CORS_ORIGINS_ENV]);
  } catch (err) {
    if (!isCorsOriginsConfigError(err)) throw err;
    console.error(`volumescope dashboard: ${err.message}`);
    process.exit(1);
  }
}
