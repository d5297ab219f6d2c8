// `npm run cluster:build`: builds the pinned upstream components (scripts/cluster/upstream.ts) once
// into `${XDG_CACHE_HOME:-$HOME/.cache}/volumescope/upstream/<key>/`, keyed by the wrapper modules
// and the toolchain, and reuses that directory while the key is the same. A new machine downloads
// the modules through the Go module proxy and builds, printing progress; a failed `go build` names
// the module and version it was building. The build runs one package at a time by default
// (`-p 1`: the machine is shared); VOLUMESCOPE_BUILD_JOBS=N allows N.
//
//   <key>/bin/kube                       etcd, kube-apiserver, kube-controller-manager, kubectl, kubelet
//   <key>/bin/{etcd,kube-apiserver,…}    links to bin/kube (it dispatches on its own name)
//   <key>/bin/csi-{attacher,provisioner,resizer,sanity}
//   <key>/manifest.json                  versions, sizes, build seconds; written last
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  BUILD_FLAGS,
  LINK_FLAGS,
  UPSTREAM_TARGETS,
  cacheKey,
  cacheRoot,
  requiredVersion,
  type Toolchain,
  type UpstreamTarget,
} from './upstream.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** A `go` command that failed, named by the module and version it was working on. */
export class GoBuildError extends Error {
  constructor(
    readonly what: string,
    readonly moduleDir: string,
    readonly detail: string,
  ) {
    super(`${what} (wrapper module ${moduleDir}) failed:\n${detail}`);
    this.name = 'GoBuildError';
  }
}
export const isGoBuildError = (e: unknown): e is GoBuildError => e instanceof GoBuildError;

/** What manifest.json records about one binary. */
interface BuiltBinary {
  readonly binary: string;
  readonly module: string;
  readonly version: string;
  readonly components: readonly string[];
  readonly bytes: number;
  readonly seconds: number;
}

export interface Manifest {
  readonly key: string;
  readonly toolchain: Toolchain;
  readonly jobs: number;
  readonly binaries: readonly BuiltBinary[];
}

function goEnv(): Toolchain {
  const r = spawnSync('go', ['env', '-json', 'GOVERSION', 'GOOS', 'GOARCH', 'CGO_ENABLED'], { encoding: 'utf8' });
  if (r.error !== undefined || r.status !== 0) {
    throw new Error(`the Go toolchain is needed to build the upstream components: 'go env' failed (${r.error?.message ?? r.stderr.trim()})`);
  }
  const env = JSON.parse(r.stdout) as Record<string, string>;
  return { goVersion: env.GOVERSION ?? '', goos: env.GOOS ?? '', goarch: env.GOARCH ?? '', cgo: env.CGO_ENABLED ?? '' };
}

function buildJobs(env: NodeJS.ProcessEnv): number {
  const raw = env.VOLUMESCOPE_BUILD_JOBS;
  if (raw === undefined || raw === '') return 1;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`VOLUMESCOPE_BUILD_JOBS=${JSON.stringify(raw)} is not a positive integer`);
  return n;
}

const seconds = (since: number): number => Math.round((performance.now() - since) / 100) / 10;
const elapsed = (s: number): string => (s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${String(Math.round(s % 60)).padStart(2, '0')}s`);

/** Runs `go …` in moduleDir; resolves with its stderr lines, or rejects with a GoBuildError. */
function runGo(moduleDir: string, args: readonly string[], what: string, onLine: (line: string) => void = () => {}): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('go', args, { cwd: join(root, moduleDir), stdio: ['ignore', 'pipe', 'pipe'] });
    const tail: string[] = [];
    let pending = '';
    const take = (chunk: Buffer): void => {
      pending += chunk.toString('utf8');
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        tail.push(line);
        if (tail.length > 40) tail.shift();
        onLine(line);
      }
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.on('error', (err) => {
      reject(new GoBuildError(what, moduleDir, err.message));
    });
    child.on('close', (code, signal) => {
      if (pending !== '') tail.push(pending);
      if (code === 0) resolve();
      else reject(new GoBuildError(what, moduleDir, `${tail.join('\n')}\n(go ${args[0]} exited ${code ?? signal})`));
    });
  });
}

/**
 * The wrapper approach holds only if every staging module that the pinned k8s.io/kubernetes maps to
 * `./staging/…` is replaced by its published release: otherwise `go` resolves it at v0.0.0 and the
 * build fails far from the cause. Checked against that release's own go.mod in the module cache.
 */
function checkStagingReplaces(moduleDir: string): void {
  const goMod = readFileSync(join(root, moduleDir, 'go.mod'), 'utf8');
  let kubernetes: string;
  try {
    kubernetes = requiredVersion(goMod, `${moduleDir}/go.mod`, 'k8s.io/kubernetes');
  } catch {
    return; // this family does not build from k8s.io/kubernetes
  }
  const r = spawnSync('go', ['mod', 'download', '-json', `k8s.io/kubernetes@${kubernetes}`], { cwd: join(root, moduleDir), encoding: 'utf8' });
  if (r.status !== 0) throw new GoBuildError(`go mod download k8s.io/kubernetes@${kubernetes}`, moduleDir, r.stdout + r.stderr);
  const upstreamMod = readFileSync((JSON.parse(r.stdout) as { GoMod: string }).GoMod, 'utf8');
  const staging = [...upstreamMod.matchAll(/^\s*(k8s\.io\/\S+)\s+=>\s+\.\/staging\//gm)].map((m) => m[1] ?? '');
  const staged = `v0.${kubernetes.slice(3)}`; // v1.34.4 → v0.34.4
  const missing = staging.filter((m) => !new RegExp(`^\\s*${m.replaceAll('.', '\\.')}\\s+=>\\s+${m.replaceAll('.', '\\.')}\\s+${staged.replaceAll('.', '\\.')}\\s*$`, 'm').test(goMod));
  if (missing.length > 0) {
    throw new GoBuildError(
      `checking the staging replaces for k8s.io/kubernetes ${kubernetes}`,
      moduleDir,
      `go.mod must replace each of these with its ${staged} release: ${missing.join(', ')}`,
    );
  }
}

async function buildTarget(t: UpstreamTarget, binDir: string, jobs: number): Promise<BuiltBinary> {
  const version = requiredVersion(readFileSync(join(root, t.moduleDir, 'go.mod'), 'utf8'), `${t.moduleDir}/go.mod`, t.versionOf);
  const ldflags = [...LINK_FLAGS, ...t.stamps(version).flatMap((s) => ['-X', s])].join(' ');
  const partial = join(binDir, `${t.binary}.partial`);
  const started = performance.now();
  let compiled = 0;
  let last = '';
  console.log(`cluster:build: building ${t.binary} (${t.versionOf} ${version}) in ${t.moduleDir}, -p ${jobs}…`);
  const ticker = setInterval(() => {
    console.log(`cluster:build:   ${t.binary}: ${compiled} packages compiled, ${elapsed(seconds(started))} (${last})`);
  }, 30_000);
  try {
    await runGo(
      t.moduleDir,
      ['build', '-p', String(jobs), '-v', ...BUILD_FLAGS, '-ldflags', ldflags, '-o', partial, t.pkg],
      `go build of ${t.binary} from ${t.versionOf} ${version}`,
      (line) => {
        if (/^[\w.-]+(\/[\w.~-]+)*$/.test(line)) {
          compiled++;
          last = line;
        }
      },
    );
  } finally {
    clearInterval(ticker);
  }
  renameSync(partial, join(binDir, t.binary));
  const built = { binary: t.binary, module: t.versionOf, version, components: t.components, bytes: statSync(join(binDir, t.binary)).size, seconds: seconds(started) };
  console.log(`cluster:build:   ${t.binary}: ${(built.bytes / 2 ** 20).toFixed(1)} MiB in ${elapsed(built.seconds)}`);
  return built;
}

/** Builds what the key's directory lacks, or reuses it; returns the directory and its manifest. */
export async function ensureUpstreamBuild(env: NodeJS.ProcessEnv = process.env): Promise<{ dir: string; manifest: Manifest; reused: boolean }> {
  const toolchain = goEnv();
  const key = cacheKey(root, toolchain);
  const dir = join(cacheRoot(env), key);
  const manifestFile = join(dir, 'manifest.json');
  if (existsSync(manifestFile)) {
    const manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as Manifest;
    if (manifest.binaries.every((b) => existsSync(join(dir, 'bin', b.binary)))) return { dir, manifest, reused: true };
  }
  const jobs = buildJobs(env);
  const binDir = join(dir, 'bin');
  mkdirSync(binDir, { recursive: true });
  console.log(`cluster:build: no build for key ${key} yet: building into ${dir} (${toolchain.goVersion})`);
  for (const moduleDir of [...new Set(UPSTREAM_TARGETS.map((t) => t.moduleDir))]) {
    const started = performance.now();
    console.log(`cluster:build: downloading the modules of ${moduleDir}…`);
    await runGo(moduleDir, ['mod', 'download'], `go mod download in ${moduleDir}`);
    checkStagingReplaces(moduleDir);
    console.log(`cluster:build:   ${moduleDir}: modules ready in ${elapsed(seconds(started))}`);
  }
  const binaries: BuiltBinary[] = [];
  for (const t of UPSTREAM_TARGETS) binaries.push(await buildTarget(t, binDir, jobs));
  for (const t of UPSTREAM_TARGETS) {
    if (t.components.length < 2) continue;
    for (const component of t.components) {
      const link = join(binDir, component);
      rmSync(link, { force: true });
      symlinkSync(t.binary, link);
    }
  }
  const manifest: Manifest = { key, toolchain, jobs, binaries };
  writeFileSync(`${manifestFile}.partial`, `${JSON.stringify(manifest, null, 2)}\n`);
  renameSync(`${manifestFile}.partial`, manifestFile);
  return { dir, manifest, reused: false };
}

function summary(dir: string, manifest: Manifest, reused: boolean): string {
  const lines = [`cluster:build: ${reused ? 'reusing' : 'built'} ${dir}`];
  for (const b of manifest.binaries) {
    lines.push(`  ${b.binary.padEnd(16)} ${b.module} ${b.version}  ${(b.bytes / 2 ** 20).toFixed(1)} MiB  built in ${elapsed(b.seconds)} at -p ${manifest.jobs}  [${b.components.join(', ')}]`);
  }
  return lines.join('\n');
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const started = performance.now();
  try {
    const { dir, manifest, reused } = await ensureUpstreamBuild();
    console.log(summary(dir, manifest, reused));
    console.log(`cluster:build: done in ${elapsed(seconds(started))}`);
  } catch (err) {
    console.error(`cluster:build: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  }
}
