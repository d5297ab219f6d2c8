// The pinned upstream components (etcd, kube-apiserver, kube-controller-manager, kubectl, the CSI
// sidecars and csi-sanity) and where their binaries live. The pins themselves are the wrapper
// modules' go.mod files under upstream/; this file names the binaries, the package each is built
// from and the version each is stamped with, and computes the cache directory that those inputs
// key. It runs nothing: scripts/cluster/build.ts builds, scripts/cluster/main.ts runs.
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, relative } from 'node:path';

/** One `go build` output: a binary built from one package of one wrapper module. */
export interface UpstreamTarget {
  /** File name of the binary in the cache's bin/ directory. */
  readonly binary: string;
  /** Wrapper module folder, relative to the repository root. */
  readonly moduleDir: string;
  /** Package to build, as `go build` takes it from inside moduleDir. */
  readonly pkg: string;
  /** The upstream module whose version this binary reports (a require of moduleDir's go.mod). */
  readonly versionOf: string;
  /** -X assignments, given the version of `versionOf`. */
  readonly stamps: (version: string) => readonly string[];
  /** Components the binary holds (a multi-call binary holds several). */
  readonly components: readonly string[];
}

/** The multi-call binary's components are run as `kube <component> …` or through links by name. */
export const KUBE_COMPONENTS = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kubectl', 'kubelet'] as const;
export type KubeComponent = (typeof KUBE_COMPONENTS)[number];

function kubernetesStamps(version: string): readonly string[] {
  const match = /^v(\d+)\.(\d+)\./.exec(version);
  if (match === null) throw new Error(`k8s.io/kubernetes version ${JSON.stringify(version)} is not vMAJOR.MINOR.PATCH`);
  const stamps: string[] = [];
  // client-go carries its own copy of the version variables (kubectl's client version reads them).
  for (const pkg of ['k8s.io/component-base/version', 'k8s.io/client-go/pkg/version']) {
    stamps.push(
      `${pkg}.gitVersion=${version}`,
      `${pkg}.gitMajor=${match[1]}`,
      `${pkg}.gitMinor=${match[2]}`,
      `${pkg}.gitTreeState=clean`,
      // A fixed date keeps the binary a function of the pins alone.
      `${pkg}.buildDate=1970-01-01T00:00:00Z`,
    );
  }
  return stamps;
}

/** The CSI sidecars keep their version in `main.version`, as their release Makefiles stamp it. */
const mainVersion = (version: string): readonly string[] => [`main.version=${version}`];

export const UPSTREAM_TARGETS: readonly UpstreamTarget[] = [
  {
    binary: 'kube',
    moduleDir: 'upstream/kube',
    pkg: './cmd/kube',
    versionOf: 'k8s.io/kubernetes',
    stamps: kubernetesStamps,
    components: KUBE_COMPONENTS,
  },
  {
    binary: 'csi-attacher',
    moduleDir: 'upstream/csi',
    pkg: 'github.com/kubernetes-csi/external-attacher/v4/cmd/csi-attacher',
    versionOf: 'github.com/kubernetes-csi/external-attacher/v4',
    stamps: mainVersion,
    components: ['csi-attacher'],
  },
  {
    binary: 'csi-provisioner',
    moduleDir: 'upstream/csi',
    pkg: 'github.com/kubernetes-csi/external-provisioner/v6/cmd/csi-provisioner',
    versionOf: 'github.com/kubernetes-csi/external-provisioner/v6',
    stamps: mainVersion,
    components: ['csi-provisioner'],
  },
  {
    binary: 'csi-resizer',
    moduleDir: 'upstream/csi',
    pkg: 'github.com/kubernetes-csi/external-resizer/v2/cmd/csi-resizer',
    versionOf: 'github.com/kubernetes-csi/external-resizer/v2',
    stamps: mainVersion,
    components: ['csi-resizer'],
  },
  {
    binary: 'csi-sanity',
    moduleDir: 'upstream/csi',
    pkg: 'github.com/kubernetes-csi/csi-test/v5/cmd/csi-sanity',
    versionOf: 'github.com/kubernetes-csi/csi-test/v5',
    // csi-sanity keeps it in main.VERSION and prints it with -version.
    stamps: (version) => [`main.VERSION=${version}`],
    components: ['csi-sanity'],
  },
];

/** Thrown when a go.mod does not require the module a target reports the version of. */
export class PinNotFoundError extends Error {
  constructor(
    readonly goMod: string,
    readonly module: string,
  ) {
    super(`${goMod} does not require ${module}: the pin a binary is stamped with is missing`);
    this.name = 'PinNotFoundError';
  }
}
export const isPinNotFoundError = (e: unknown): e is PinNotFoundError => e instanceof PinNotFoundError;

/**
 * The version `goMod` (the text of a go.mod) requires `module` at, from a `require` line or block.
 * Replacements do not count: a wrapper pins its upstream modules by require.
 */
export function requiredVersion(goModText: string, goModName: string, module: string): string {
  let inRequire = false;
  for (const raw of goModText.split('\n')) {
    const line = raw.replace(/\/\/.*$/, '').trim();
    if (line === 'require (') {
      inRequire = true;
      continue;
    }
    if (inRequire && line === ')') {
      inRequire = false;
      continue;
    }
    const fields = line.split(/\s+/);
    const entry = inRequire ? fields : fields[0] === 'require' ? fields.slice(1) : [];
    if (entry.length === 2 && entry[0] === module && entry[1] !== undefined) return entry[1];
  }
  throw new PinNotFoundError(goModName, module);
}

/** Flags every binary is built with (besides -p and the -X stamps). */
export const BUILD_FLAGS = ['-trimpath'] as const;
/** Linker flags besides the stamps: strip the symbol table and the DWARF data. */
export const LINK_FLAGS = ['-s', '-w'] as const;

/** The files whose content decides the binaries: go.mod, go.sum and the Go sources of upstream/. */
function keyedFiles(root: string): string[] {
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      // Test files (the differential oracle) are not part of any built binary.
      else if (name === 'go.mod' || name === 'go.sum' || (name.endsWith('.go') && !name.endsWith('_test.go'))) files.push(path);
    }
  };
  walk(join(root, 'upstream'));
  return files;
}

/** Toolchain facts that change the output: `go env GOVERSION GOOS GOARCH CGO_ENABLED`. */
export interface Toolchain {
  readonly goVersion: string;
  readonly goos: string;
  readonly goarch: string;
  readonly cgo: string;
}

/**
 * The cache key: a hash of the wrapper modules (go.mod, go.sum, Go sources), the target table
 * (binaries, packages, stamps) and the toolchain. Any pin change gives a new key, so a stale binary
 * is never reused; the same inputs on the same machine give the same key, so a build is reused.
 */
export function cacheKey(root: string, toolchain: Toolchain): string {
  const hash = createHash('sha256');
  for (const file of keyedFiles(root)) {
    hash.update(`${relative(root, file)}\0`);
    hash.update(readFileSync(file));
    hash.update('\0');
  }
  for (const t of UPSTREAM_TARGETS) {
    const goMod = readFileSync(join(root, t.moduleDir, 'go.mod'), 'utf8');
    const version = requiredVersion(goMod, `${t.moduleDir}/go.mod`, t.versionOf);
    hash.update(JSON.stringify([t.binary, t.moduleDir, t.pkg, t.stamps(version), BUILD_FLAGS, LINK_FLAGS]));
  }
  hash.update(JSON.stringify(toolchain));
  return hash.digest('hex').slice(0, 16);
}

/** `${XDG_CACHE_HOME:-$HOME/.cache}/volumescope/upstream`: outside any work tree. */
export function cacheRoot(env: NodeJS.ProcessEnv): string {
  const xdg = env.XDG_CACHE_HOME;
  const base = xdg !== undefined && xdg !== '' ? xdg : join(homedir(), '.cache');
  return join(base, 'volumescope', 'upstream');
}
