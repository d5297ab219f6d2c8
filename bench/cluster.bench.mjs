// `npm run bench:cluster`: bench/cluster.bench.ts (the agent side by side with the upstream
// kubelet on the local cluster) on the pinned Node, after the upstream build (reused when present),
// as root inside a private mount namespace like `npm run test:cluster`, so no mount of either node
// leaks into the host. JSON on stdout, progress on stderr; extra arguments go to the bench.
// @ts-check
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensurePinnedNode } from '../scripts/pinned-node.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
ensurePinnedNode(import.meta.url);

const build = spawnSync(process.execPath, ['--import', 'tsx', join(root, 'scripts', 'cluster', 'build.ts')], { cwd: root, stdio: ['ignore', 2, 2] }); // its progress lines go to stderr: stdout is the JSON
if (build.status !== 0) process.exit(build.status ?? 1);

const { mountNamespaceCommand } = await import('../scripts/mount-namespace.mjs');
const env = { ...process.env };
delete env.NODE_OPTIONS;
const command = mountNamespaceCommand(['--import', 'tsx', join(root, 'bench', 'cluster.bench.ts'), ...process.argv.slice(2)], env);
process.stderr.write(`[bench:cluster] ${command.note}\n`);
const result = spawnSync(command.file, command.args, { cwd: root, stdio: 'inherit', env: command.env });
process.exit(result.status ?? 1);
