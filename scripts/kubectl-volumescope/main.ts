/**
 * The process of `kubectl-volumescope` (started by bin.mjs): real stdout/stderr, environment and
 * clock; SIGINT/SIGTERM end `--watch` with the exit code of the last state shown.
 */
import { runCli } from './cli.ts';

const stop = new AbortController();
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    stop.abort();
  });
}

const code = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  now: () => Date.now(),
  stop: stop.signal,
  every: (ms, fn) => {
    const timer = setInterval(fn, ms);
    return () => {
      clearInterval(timer);
    };
  },
});
process.exitCode = code;
