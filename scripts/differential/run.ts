/**
 * `npm run test:differential -- [--traces N] [--seed S] [--corpus] [--no-save]`: plays traces on
 * the Go oracle (upstream's volume manager parts) and on the engine, compares the observable state
 * after every step, shrinks the first divergence to a minimal trace and saves it in the corpus
 * (e2e/differential/corpus/) as a regression test. `--corpus` plays the saved corpus instead of
 * random traces. Prints `N traces, D divergences`, then the first divergence in detail and what
 * the allow-list skipped. Exits 1 on a divergence. Format and allow-list: docs/differential.md.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { allowList, compareRuns, type Divergence } from './compare.ts';
import { playOnEngine } from './engine-side.ts';
import { generateTraces, validSteps } from './generate.ts';
import { buildOracle, playOnOracle } from './oracle.ts';
import type { Step, Trace } from './trace.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const corpusDir = join(root, 'e2e', 'differential', 'corpus');
const batchSize = 500;

async function diverges(bin: string, trace: Trace, skipped: Map<string, number>): Promise<Divergence | null> {
  const [oracle] = await playOnOracle(bin, [trace]);
  return divergenceOf(trace, oracle?.states ?? [], oracle?.errors ?? [], await playOnEngine(trace), skipped);
}

function divergenceOf(trace: Trace, oracle: Parameters<typeof compareRuns>[0], errors: readonly string[], engine: Parameters<typeof compareRuns>[1], skipped: Map<string, number>): Divergence | null {
  if (errors.length > 0) return { step: -1, difference: `oracle errors: ${errors.join('; ')} (trace ${JSON.stringify(trace)})`, oracle: undefined, engine: undefined };
  return compareRuns(oracle, engine, skipped);
}

/** Smaller variants of a trace: one step fewer, one pod volume fewer, a shorter advance. */
function* candidates(trace: Trace): Generator<Trace> {
  const steps = trace.steps;
  for (let i = 0; i < steps.length; i++) yield { ...trace, steps: validSteps([...steps.slice(0, i), ...steps.slice(i + 1)]) };
  for (let i = 0; i < steps.length; i++) {
    const s = steps[i];
    if (s?.op === 'addPod' && s.volumes.length > 1) {
      for (let j = 0; j < s.volumes.length; j++) {
        const smaller: Step = { ...s, volumes: s.volumes.filter((_, k) => k !== j) };
        yield { ...trace, steps: steps.map((x, k) => (k === i ? smaller : x)) };
      }
    }
    if (s?.op === 'advance' && s.ms > 200) yield { ...trace, steps: steps.map((x, k) => (k === i ? { op: 'advance', ms: Math.floor(s.ms / 2) } : x)) };
  }
}

/** Greedy shrinking: take the first smaller variant that still diverges, until none does. */
async function shrink(bin: string, trace: Trace): Promise<Trace> {
  let current = trace;
  for (let round = 0; round < 200; round++) {
    let next: Trace | null = null;
    for (const c of candidates(current)) {
      if (c.steps.length === 0) continue;
      if ((await diverges(bin, c, new Map())) !== null) {
        next = c;
        break;
      }
    }
    if (next === null) return current;
    current = next;
  }
  return current;
}

function readCorpus(): Trace[] {
  let names: string[];
  try {
    names = readdirSync(corpusDir).filter((n) => n.endsWith('.json')).sort();
  } catch {
    return [];
  }
  return names.map((n) => ({ ...(JSON.parse(readFileSync(join(corpusDir, n), 'utf8')) as Trace), name: n }));
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: { traces: { type: 'string' }, seed: { type: 'string' }, corpus: { type: 'boolean' }, 'no-save': { type: 'boolean' } },
  });
  const seed = values.seed !== undefined ? Number(values.seed) : Date.now() % 2 ** 31;
  const fromCorpus = values.corpus === true;
  const traces = fromCorpus ? readCorpus() : generateTraces(Number(values.traces ?? '100'), seed);
  const started = Date.now();
  const bin = buildOracle((l) => { console.log(l); });
  const skipped = new Map<string, number>();
  let divergences = 0;
  let first: { trace: Trace; divergence: Divergence } | null = null;
  // The oracle plays the next batch (its own process) while the engine plays this one.
  let nextOracle = playOnOracle(bin, traces.slice(0, batchSize));
  for (let at = 0; at < traces.length; at += batchSize) {
    const batch = traces.slice(at, at + batchSize);
    const oracle = await nextOracle;
    if (at + batchSize < traces.length) nextOracle = playOnOracle(bin, traces.slice(at + batchSize, at + 2 * batchSize));
    for (const [i, trace] of batch.entries()) {
      const o = oracle[i];
      const d = divergenceOf(trace, o?.states ?? [], o?.errors ?? [], await playOnEngine(trace), skipped);
      if (d === null) continue;
      divergences++;
      first ??= { trace, divergence: d };
    }
  }
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  console.log(`${traces.length} traces, ${divergences} divergences`);
  console.log(`differential: ${fromCorpus ? `corpus ${corpusDir.slice(root.length + 1)}` : `seed ${seed}`}, ${seconds} s`);
  for (const entry of allowList) console.log(`differential: allow-list ${entry.id}: skipped ${skipped.get(entry.id) ?? 0} step(s) — ${entry.reason}`);
  if (first === null) return 0;
  let trace = first.trace;
  let divergence = first.divergence;
  if (!fromCorpus) {
    trace = await shrink(bin, first.trace);
    divergence = (await diverges(bin, trace, new Map())) ?? divergence;
    if (values['no-save'] !== true) {
      mkdirSync(corpusDir, { recursive: true });
      const file = join(corpusDir, `seed-${seed}-${Date.now()}.json`);
      writeFileSync(file, `${JSON.stringify({ ...trace, name: undefined }, null, 2)}\n`);
      console.log(`differential: minimal trace saved as ${file.slice(root.length + 1)}`);
    }
  }
  console.log(`first divergence${trace.name !== undefined ? ` (${trace.name})` : ''}: step ${divergence.step}: ${divergence.difference}`);
  console.log(`trace: ${JSON.stringify(trace)}`);
  console.log(`oracle: ${JSON.stringify(divergence.oracle)}`);
  console.log(`engine: ${JSON.stringify(divergence.engine)}`);
  return 1;
}

process.exitCode = await main();
