/**
 * Client components run in the browser: nothing they import (transitively, value imports only)
 * may import a Node built-in (`node:fs`, …). Turbopack refuses such a build ("the chunking context
 * does not support external modules (request: node:fs)") only at `next build`, minutes into CI;
 * this check says which import chain is at fault, in the unit run.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');

function sourceFiles(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.tsx?$/.test(e.name) && !/\.test\.tsx?$/.test(e.name))
    .map((e) => join(e.parentPath, e.name));
}

/** The value imports of a file (type-only imports and `import type` are skipped). */
function valueImports(text: string): string[] {
  const found: string[] = [];
  for (const m of text.matchAll(/^(?:import|export)\s+(type\s+)?(?:[^'";]*?\s+from\s+)?'([^']+)'/gms)) {
    if (m[1] === undefined && m[2] !== undefined) found.push(m[2]);
  }
  for (const m of text.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g)) if (m[1] !== undefined) found.push(m[1]);
  return found;
}

function resolveRelative(from: string, spec: string): string | null {
  const base = resolve(dirname(from), spec);
  for (const candidate of [base, `${base}.ts`, `${base}.tsx`, join(base, 'index.ts')]) if (existsSync(candidate) && candidate.match(/\.tsx?$/)) return candidate;
  return null;
}

/** The first chain from `entry` to a file that imports a Node built-in, or null. */
function chainToNodeBuiltin(entry: string): string[] | null {
  const seen = new Set<string>();
  const walk = (file: string, chain: string[]): string[] | null => {
    if (seen.has(file)) return null;
    seen.add(file);
    for (const spec of valueImports(readFileSync(file, 'utf8'))) {
      if (spec.startsWith('node:')) return [...chain, spec];
      if (!spec.startsWith('.')) continue;
      const next = resolveRelative(file, spec);
      if (next === null) continue;
      const found = walk(next, [...chain, relative(root, next)]);
      if (found !== null) return found;
    }
    return null;
  };
  return walk(entry, [relative(root, entry)]);
}

const clientFiles = [...sourceFiles('components'), ...sourceFiles('app')].filter((f) => /^\s*['"]use client['"]/.test(readFileSync(f, 'utf8')));

describe('client components', () => {
  it('exist (a check over no files proves nothing)', () => {
    expect(clientFiles.length).toBeGreaterThan(10);
  });

  it('never reach a Node built-in through their imports', () => {
    const offenders = clientFiles.flatMap((f) => {
      const chain = chainToNodeBuiltin(f);
      return chain === null ? [] : [chain.join(' → ')];
    });
    expect(offenders).toEqual([]);
  });

  it('the chain finder sees a Node built-in behind relative imports', () => {
    expect(chainToNodeBuiltin(join(root, 'lib', 'dashboard', 'pod-search-relay.ts'))?.at(-1)).toMatch(/^node:/);
  });
});
