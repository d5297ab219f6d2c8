/**
 * `npm run kubectl-plugin:package -- [--out DIR] [--base-url URL]`: the krew package of
 * `kubectl volumescope`. Bundles main.ts with everything it imports (the project's modules,
 * client-node, zod, yaml) into ONE JavaScript file with a `#!/usr/bin/env node` line (esbuild),
 * packs it as `kubectl-volumescope.tar.gz` and writes the krew manifest `volumescope.yaml` from the
 * template krew/volumescope.yaml with the version (package.json), the archive's URL
 * (`<base-url>/kubectl-volumescope.tar.gz`) and its sha256. Prints the paths as JSON.
 *
 * Why a bundle: the executable of `npm install -g` (bin.mjs) runs the TypeScript sources of a
 * checkout through tsx; a krew archive has no checkout, so it carries the compiled plugin.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { build } from 'esbuild';

const execFileAsync = promisify(execFile);
const HERE = fileURLToPath(new URL('.', import.meta.url));
const ROOT = resolve(HERE, '..', '..');
export const ARCHIVE_NAME = 'kubectl-volumescope.tar.gz';
export const BIN_NAME = 'kubectl-volumescope';
/** The Node the bundle is compiled for (krew users bring their own `node`). */
const NODE_TARGET = 'node20';

export interface PackageResult {
  readonly archive: string;
  readonly manifest: string;
  readonly sha256: string;
  readonly version: string;
}

/** Builds the bundle, the archive and the manifest in `outDir`. */
export async function packagePlugin(outDir: string, baseUrl: string): Promise<PackageResult> {
  const stage = join(outDir, 'stage');
  await rm(stage, { recursive: true, force: true });
  await mkdir(stage, { recursive: true });
  const bin = join(stage, BIN_NAME);
  await build({
    entryPoints: [join(HERE, 'main.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: NODE_TARGET,
    minify: true,
    legalComments: 'none',
    outfile: bin,
    logLevel: 'warning',
    // CommonJS dependencies of client-node call require(); an ES module has none of its own.
    banner: { js: "#!/usr/bin/env node\nimport { createRequire as __volumescopeRequire } from 'node:module'; const require = __volumescopeRequire(import.meta.url);" },
  });
  await chmod(bin, 0o755);
  const archive = join(outDir, ARCHIVE_NAME);
  await execFileAsync('tar', ['-czf', archive, '-C', stage, BIN_NAME]);
  const sha256 = createHash('sha256').update(await readFile(archive)).digest('hex');
  const pkg = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string };
  const template = await readFile(join(HERE, 'krew', 'volumescope.yaml'), 'utf8');
  const values: Record<string, string> = {
    VERSION: pkg.version,
    HOMEPAGE: baseUrl,
    URI: `${baseUrl.replace(/\/+$/, '')}/${ARCHIVE_NAME}`,
    SHA256: sha256,
  };
  const manifestText = template
    .split('\n')
    .filter((line) => !line.startsWith('#'))
    .join('\n')
    .replace(/\$\{([A-Z0-9]+)\}/g, (all, name: string) => values[name] ?? all);
  const manifest = join(outDir, 'volumescope.yaml');
  await writeFile(manifest, manifestText.trimStart());
  return { archive, manifest, sha256, version: pkg.version };
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { out: { type: 'string' }, 'base-url': { type: 'string' } } });
  const out = resolve(values.out ?? join(ROOT, '.volumescope', 'krew'));
  await mkdir(out, { recursive: true });
  const result = await packagePlugin(out, values['base-url'] ?? `file://${out}`);
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
