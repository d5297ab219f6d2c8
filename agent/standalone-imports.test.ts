/**
 * A standalone agent (a manifest source, no --kubeconfig) never loads @kubernetes/client-node:
 * the client alone adds about 85 MB of RSS and 2 s of start-up, so every module that needs it is
 * imported only when the API source starts (agent/node/node-agent.ts `startKubeSource`, the
 * webhook authenticator in agent/main.ts). This loads the modules agent/main.ts imports eagerly in
 * a fresh Node process and records every resolution of the client's package.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

const repo = fileURLToPath(new URL('..', import.meta.url));

/** The parent URLs that resolved @kubernetes/client-node while `modules` were imported. */
function clientNodeImporters(modules: readonly string[]): string[] {
  const script = `
import { registerHooks } from 'node:module';
const importers = [];
registerHooks({ resolve(specifier, context, next) { if (specifier.startsWith('@kubernetes/client-node')) importers.push(context.parentURL); return next(specifier, context); } });
for (const m of ${JSON.stringify(modules)}) await import(m);
process.stdout.write(JSON.stringify(importers));
`;
  const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: repo, encoding: 'utf8', timeout: 60_000 });
  return (JSON.parse(out) as string[]).map((url) => url.replace(pathToFileURL(repo).href, ''));
}

describe('standalone agent imports', () => {
  it("the modules agent/main.ts loads before it knows the source do not load the Kubernetes client", () => {
    expect(clientNodeImporters(['./agent/node/flags.ts', './agent/node/logger.ts', './agent/node/node-agent.ts', './agent/node/token-file.ts', './agent/server/agent-server.ts', './agent/server/authenticator.ts', './agent/server/metrics.ts'])).toEqual([]);
  });

  it('the probe sees the client when a module that needs it is loaded (the node Lease controller)', () => {
    // node-lease.ts imports the client, and so does the API client factory it uses (the package and its package.json).
    expect([...new Set(clientNodeImporters(['./agent/node/node-lease.ts']))].sort()).toEqual(['agent/node/node-lease.ts', 'lib/sources/kube/api-client.ts']);
  });
});
