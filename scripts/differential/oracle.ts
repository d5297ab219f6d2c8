/**
 * The Go side of the differential test: builds the oracle (upstream/kube/differential, a `go test`
 * binary) once into the upstream build cache, keyed by its sources and the toolchain, and plays
 * traces on it: one trace per stdin line, one JSON line per step and `{"end":true}` per trace back.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cacheRoot } from '../cluster/upstream.ts';
import type { ObservedState, Trace } from './trace.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const moduleDir = join(root, 'upstream', 'kube');

/** The oracle could not be built or did not answer as its protocol says. */
export class OracleError extends Error {
  override readonly name = 'OracleError';
}

export function isOracleError(err: unknown): err is OracleError {
  return err instanceof OracleError;
}

/** Path of the oracle binary, built when the cache has none for these sources and this toolchain. */
export function buildOracle(log: (line: string) => void): string {
  const env = spawnSync('go', ['env', 'GOVERSION', 'GOOS', 'GOARCH'], { encoding: 'utf8' });
  if (env.status !== 0) throw new OracleError(`go env failed (Go >= 1.26 must be on PATH): ${env.stderr || String(env.error)}`);
  const hash = createHash('sha256').update(env.stdout);
  const srcDir = join(moduleDir, 'differential');
  for (const f of [join(moduleDir, 'go.mod'), join(moduleDir, 'go.sum'), ...readdirSync(srcDir).sort().map((n) => join(srcDir, n))]) {
    hash.update(`${f.slice(root.length)}\0`).update(readFileSync(f)).update('\0');
  }
  const dir = join(cacheRoot(process.env), 'differential', hash.digest('hex').slice(0, 16));
  const bin = join(dir, 'differential.test');
  if (existsSync(bin)) return bin;
  mkdirSync(dir, { recursive: true });
  log(`differential: building the Go oracle into ${dir} (go test -c ./differential)`);
  const started = Date.now();
  const tmp = `${bin}.tmp-${process.pid}`;
  const r = spawnSync('go', ['test', '-c', '-o', tmp, './differential'], { cwd: moduleDir, encoding: 'utf8', stdio: ['ignore', 'inherit', 'pipe'] });
  if (r.status !== 0) throw new OracleError(`go test -c ./differential failed:\n${r.stderr}`);
  renameSync(tmp, bin);
  log(`differential: oracle built in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return bin;
}

/** One trace's outcome on the oracle: the state after every step, or the error it reported. */
export interface OracleResult {
  states: ObservedState[];
  errors: string[];
}

/** Plays every trace on one oracle process; results in trace order. */
export function playOnOracle(bin: string, traces: readonly Trace[]): Promise<OracleResult[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, ['-test.run', '^TestDifferential$'], { stdio: ['pipe', 'pipe', 'pipe'] });
    const results: OracleResult[] = [];
    let current: OracleResult = { states: [], errors: [] };
    let buffered = '';
    let stderr = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      buffered += chunk;
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        if (!line.startsWith('{')) continue; // go test's own PASS/ok lines
        const value = JSON.parse(line) as Partial<ObservedState> & { end?: boolean; error?: string };
        if (value.end === true) {
          results.push(current);
          current = { states: [], errors: [] };
        } else if (value.error !== undefined) current.errors.push(value.error);
        else current.states.push(value as ObservedState);
      }
    });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-20_000);
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0 || results.length !== traces.length) {
        reject(new OracleError(`oracle exited ${String(code)} after ${results.length}/${traces.length} traces:\n${stderr}`));
      } else resolve(results);
    });
    child.stdin.end(traces.map((t) => JSON.stringify(t)).join('\n') + '\n');
  });
}
