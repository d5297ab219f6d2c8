/**
 * The client layer's import rules, checked on the source text:
 * - the engine (lib/volumemanager, lib/operationexecutor, lib/volume) and lib/api never import
 *   lib/kube-client;
 * - lib/kube-client and lib/dashboard import `@kubernetes/client-node` for types only, so the
 *   dashboard loads the client at run time (loadClientNode) and its build does not bundle it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');

function sourceFiles(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && /\.tsx?$/.test(entry.name))
    .map((entry) => relative(root, join(entry.parentPath, entry.name)));
}

/** The module specifiers of the file's import and export statements, with whether they are type-only. */
function imports(file: string): { from: string; typeOnly: boolean }[] {
  const text = readFileSync(join(root, file), 'utf8');
  const found: { from: string; typeOnly: boolean }[] = [];
  for (const match of text.matchAll(/^(?:import|export)\s+(type\s+)?(?:[^'";]*?\s+from\s+)?'([^']+)'/gms)) {
    found.push({ from: match[2] ?? '', typeOnly: match[1] !== undefined });
  }
  for (const match of text.matchAll(/\bimport\(\s*(?:\/\*[^*]*\*\/\s*)*'([^']+)'\s*\)/g)) {
    found.push({ from: match[1] ?? '', typeOnly: false });
  }
  return found;
}

describe('lib/kube-client boundaries', () => {
  it.each(['lib/volumemanager', 'lib/operationexecutor', 'lib/volume', 'lib/api'])('%s does not import the client layer', (dir) => {
    const offenders = sourceFiles(dir).filter((file) => imports(file).some((i) => i.from.includes('kube-client/')));
    expect(offenders).toEqual([]);
  });

  it.each(['lib/kube-client', 'lib/dashboard'])('%s imports client-node only as types (or through loadClientNode)', (dir) => {
    const offenders = sourceFiles(dir)
      .filter((file) => !file.endsWith('.test.ts') && !file.includes('/testing/') && file !== 'lib/kube-client/client-node.ts')
      .filter((file) => imports(file).some((i) => i.from === '@kubernetes/client-node' && !i.typeOnly));
    expect(offenders).toEqual([]);
  });

  it('the import reader sees value and type imports (a rule that cannot fail proves nothing)', () => {
    expect(imports('lib/kube-client/restarting-informer.ts')).toContainEqual({ from: '@kubernetes/client-node', typeOnly: true });
    expect(imports('lib/kube-client/client-node.ts')).toContainEqual({ from: '@kubernetes/client-node', typeOnly: false });
    expect(imports('lib/sources/kube/resilient-informer.ts')).toContainEqual({ from: '@kubernetes/client-node', typeOnly: false });
  });
});
