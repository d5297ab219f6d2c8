// `npm run test:cluster`: the tests against the real upstream components (e2e/cluster/,
// vitest.cluster.config.ts). First the upstream build (scripts/cluster/build.ts: reused when
// present, else built with progress lines; needs Go), then vitest on the pinned Node, as root
// inside a private mount namespace (scripts/mount-namespace.mjs) like `npm run cluster`, so the
// agents' and the CSI driver's mounts cannot leak into the host. Extra arguments go to
// `vitest run` (e.g. a test file).
// @ts-check
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensurePinnedNode } from '../pinned-node.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
ensurePinnedNode(import.meta.url);

const build = spawnSync(process.execPath, ['--import', 'tsx', join(root, 'scripts', 'cluster', 'build.ts')], { cwd: root, stdio: 'inherit' });
if (build.status !== 0) process.exit(build.status ?? 1);

const { mountNamespaceCommand } = await import('../mount-namespace.mjs');
const env = { ...process.env };
delete env.NODE_OPTIONS;
const vitest = join(root, 'node_modules', 'vitest', 'vitest.mjs');
const command = mountNamespaceCommand([vitest, 'run', '--config', join(root, 'vitest.cluster.config.ts'), ...process.argv.slice(2)], env);
console.log(`test:cluster: ${command.note}`);
const started = performance.now();
const result = spawnSync(command.file, command.args, { cwd: root, stdio: 'inherit', env: command.env });
console.log(`test:cluster: finished in ${Math.round((performance.now() - started) / 1000)} s (exit ${result.status ?? result.signal ?? 'unknown'})`);
process.exit(result.status ?? 1);
