/**
 * A standalone agent (a manifest source, no --kubeconfig) never loads @kubernetes/client-node:
 * the client alone adds about 85 MB of RSS and 2 s of start-up, so every module that needs it is
 * imported only when the API source starts (agent/node/node-agent.ts `startKubeSource`, the
 * webhook authenticator in agent/main.ts). The other way round, an agent on the API server never
 * loads the manifest source's YAML parser and schemas (about 10 ms of every start's main thread).
 * Each test loads modules in a fresh Node process and records every resolution of a package.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

const repo = fileURLToPath(new URL('..', import.meta.url));

/** The parent URLs that resolved `pkg` (or a path inside it) while `modules` were imported. */
function importersOf(pkg: string, modules: readonly string[]): string[] {
  const script = `
import { registerHooks } from 'node:module';
const importers = [];
registerHooks({ resolve(specifier, context, next) { if (specifier === ${JSON.stringify(pkg)} || specifier.startsWith(${JSON.stringify(`${pkg}/`)})) importers.push(context.parentURL); return next(specifier, context); } });
for (const m of ${JSON.stringify(modules)}) await import(m);
process.stdout.write(JSON.stringify(importers));
`;
  const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: repo, encoding: 'utf8', timeout: 60_000 });
  return (JSON.parse(out) as string[]).map((url) => url.replace(pathToFileURL(repo).href, ''));
}

const clientNodeImporters = (modules: readonly string[]): string[] => importersOf('@kubernetes/client-node', modules);

/** What agent/main.ts imports before it knows the source. */
const EAGER = ['./agent/node/flags.ts', './agent/node/logger.ts', './agent/node/node-agent.ts', './agent/node/token-file.ts', './agent/server/agent-server.ts', './agent/server/authenticator.ts', './agent/server/metrics.ts'];
/** What node-agent.ts `loadKubeModules` imports for the API source. */
const KUBE = ['./lib/sources/kube/index.ts', './agent/node/kube-objects.ts', './lib/kube-client/kubeconfig.ts', './agent/node/client-node-classes.ts', './agent/node/csi-node-info.ts', './agent/node/node-registration.ts', './agent/node/node-lease.ts'];

describe('standalone agent imports', () => {
  it("the modules agent/main.ts loads before it knows the source do not load the Kubernetes client", () => {
    expect(clientNodeImporters(EAGER)).toEqual([]);
  });

  it('an agent on the API server does not load the YAML parser of the manifest source', () => {
    expect(importersOf('yaml', [...EAGER, ...KUBE])).toEqual([]);
  });

  it('the probe sees the YAML parser when the manifest source is loaded', () => {
    expect(importersOf('yaml', ['./lib/sources/manifest/index.ts'])).toEqual(['lib/sources/manifest/parse-manifest-file.ts']);
  });

  it('the probe sees the client when a module that needs it is loaded (the node Lease controller)', () => {
    // node-lease.ts imports the client, and so does the API client factory it uses (the package and its package.json).
    expect([...new Set(clientNodeImporters(['./agent/node/node-lease.ts']))].sort()).toEqual(['agent/node/node-lease.ts', 'lib/sources/kube/api-client.ts']);
  });
});
