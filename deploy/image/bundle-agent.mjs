// Bundles the node agent (agent/main.ts and everything it imports from this repository) into one
// ES module for the container image: `node deploy/image/bundle-agent.mjs [outfile]`, default
// dist/agent.mjs. Run in the Dockerfile's build stage, after `npm ci`.
//
// Why a bundle: the agent is TypeScript, run in development with tsx (a devDependency). The image
// carries production dependencies only (no tsx, no TypeScript, no esbuild at run time), and one
// pre-compiled file starts faster and uses less memory than transpiling on every start.
//
// Rules the bundle keeps:
// - npm packages stay external (resolved from the image's node_modules at run time), and each must
//   be a production dependency in package.json, or `npm ci --omit=dev` would leave it out: the
//   build fails naming it.
// - `import.meta.url` keeps meaning "this source file": every occurrence in a repository file is
//   rewritten to that file's original location, relative to the bundle. The CSI .proto files
//   (lib/csi-spec/) and package.json (the agent's version) are found that way, so the image must
//   keep them at the same place relative to the bundle (dist/ beside lib/ and package.json).
// - Any other `import.meta.*` (dirname, filename, resolve…) fails the build rather than resolving
//   against the bundle's own directory without anyone noticing.
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const outfile = resolve(root, process.argv[2] ?? join('dist', 'agent.mjs'));
const entry = join(root, 'agent', 'main.ts');

/** @type {import('esbuild').Plugin} */
const keepSourceLocations = {
  name: 'keep-source-locations',
  setup(b) {
    b.onLoad({ filter: /\.[cm]?ts$/ }, async (args) => {
      if (args.path.split(sep).includes('node_modules')) return undefined;
      const text = await readFile(args.path, 'utf8');
      const other = /import\.meta\.(?!url\b)([A-Za-z_$][\w$]*)/.exec(text);
      if (other !== null) {
        return { errors: [{ text: `import.meta.${other[1]} cannot be kept in a bundle; use import.meta.url (${relative(root, args.path)})` }] };
      }
      if (!text.includes('import.meta.url')) return undefined;
      const fromBundle = relative(dirname(outfile), args.path).split(sep).join('/');
      return {
        contents: text.replaceAll('import.meta.url', `new URL(${JSON.stringify(fromBundle)}, import.meta.url).href`),
        loader: 'ts',
      };
    });
  },
};

const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const production = new Set(Object.keys(pkg.dependencies ?? {}));

const result = await build({
  entryPoints: [entry],
  outfile,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node24',
  packages: 'external',
  sourcemap: 'linked',
  sourcesContent: false,
  metafile: true,
  logLevel: 'warning',
  plugins: [keepSourceLocations],
});

const packageName = (specifier) => {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
};
const builtins = new Set(builtinModules);
const external = new Set();
for (const input of Object.values(result.metafile.inputs)) {
  for (const imp of input.imports) {
    if (imp.external && !imp.path.startsWith('node:') && !builtins.has(imp.path)) external.add(packageName(imp.path));
  }
}
const missing = [...external].filter((name) => !production.has(name)).sort();
if (missing.length > 0) {
  console.error(`bundle-agent: the agent imports ${missing.join(', ')}, not in package.json "dependencies" (the image installs those only)`);
  process.exit(1);
}
console.log(`bundle-agent: ${relative(root, outfile)} (external: ${[...external].sort().join(', ')})`);
