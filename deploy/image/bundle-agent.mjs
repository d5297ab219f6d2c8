// Bundles the node agent (agent/main.ts and everything it imports from this repository) into one
// script for the container image: `node deploy/image/bundle-agent.mjs [outfile]`, default
// dist/agent.mjs. Run in the Dockerfile's build stage, after `npm ci`. Two files come out: the
// bundle, `agent.cjs` beside outfile, and outfile itself, the entry that runs it
// (deploy/image/agent-entry.mjs, which explains why the bundle is run through node:vm with a code
// cache of its own).
//
// Why a bundle: the agent is TypeScript, run in development with tsx (a devDependency). The image
// carries production dependencies only (no tsx, no TypeScript, no esbuild at run time), and one
// pre-compiled file starts faster and uses less memory than transpiling on every start.
//
// Why the npm packages are inside it too: loading them from node_modules was most of the agent's
// start. `@kubernetes/client-node` alone is about 1,000 ES module files (its generated models),
// measured 485 ms to import on Node 24; the agent bundle with its packages external took 620–690 ms
// to print --help, 160–220 ms with every package bundled and whitespace and syntax minified
// (2-core machine, NODE_COMPILE_CACHE warm; whitespace minification alone about 45 ms of it), and
// 99 MB resident instead of 157 MB. Identifiers are not minified: a stack trace names the
// functions. The linked source map (agent.cjs.map) gives file and line with
// NODE_OPTIONS=--enable-source-maps (the entry then requires the bundle instead of running it with
// its code cache); the entrypoint does not set it, because pino asks for its
// caller's call sites when a logger is made and the first mapped call site parses the whole map
// (measured 195 ms of the start, plus 46 ms reading it at load).
//
// Rules the bundle keeps:
// - Every npm package a repository file imports must be a production dependency in package.json:
//   the build fails naming it (a devDependency has no place in the agent, and the image's
//   `npm ci --omit=dev` would leave it out for the dashboard's node_modules).
// - Only OPTIONAL_EXTERNAL stays outside: native add-ons and helpers that ws and debug require
//   inside a try/catch and use only when installed. Nothing else needs node_modules at run time.
// - The bundle is a CommonJS script run by the entry with the module wrapper's arguments: `require`
//   (node:module's createRequire, for the Node built-ins the packages require). `__dirname` stays
//   undefined on purpose:
//   the only packages that read it (grpc-js's channelz and ORCA services, pino's transport
//   workers) are paths the agent never takes, and a ReferenceError there is loud where a wrong
//   directory would not be.
// - `import.meta.url` keeps meaning "this source file": every occurrence in a repository file is
//   rewritten to that file's original location, relative to the bundle (whose own URL the banner
//   computes from `__filename`). The CSI .proto files
//   (lib/csi-spec/) and package.json (the agent's version) are found that way, so the image must
//   keep them at the same place relative to the bundle (dist/ beside lib/ and package.json).
// - Any other `import.meta.*` (dirname, filename, resolve…) fails the build rather than resolving
//   against the bundle's own directory without anyone noticing.
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const entryOut = resolve(root, process.argv[2] ?? join('dist', 'agent.mjs'));
const outfile = join(dirname(entryOut), 'agent.cjs');
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

/**
 * Node's built-in modules imported by ES modules are required instead (a CommonJS shim per
 * built-in, as the bundled CommonJS packages already do through the banner's `require`). An ES
 * import of a built-in builds its ES module facade, which reads every export: for `node:http`
 * that includes the getters that load Node's own copy of undici (its `fetch`, which the agent does
 * not use), measured 15.5 ms of the 200 ms that `--help` of the bundle took, plus about 6 ms of
 * facades. A `require` reads an export only when the code uses it.
 */
const builtinsAsRequire = {
  name: 'builtins-as-require',
  setup(b) {
    b.onResolve({ filter: /^(node:)?[a-z_/0-9]+$/ }, (args) => {
      if (args.kind !== 'import-statement' && args.kind !== 'dynamic-import') return undefined;
      if (!builtins.has(args.path.replace(/^node:/, '')) && !builtins.has(args.path)) return undefined;
      return { path: args.path, namespace: 'builtin-require' };
    });
    b.onLoad({ filter: /.*/, namespace: 'builtin-require' }, (args) => ({ contents: `module.exports = require(${JSON.stringify(args.path)});`, loader: 'js' }));
  },
};

/** Required inside a try/catch by ws (bufferutil, utf-8-validate) and debug (supports-color); absent from the image. */
const OPTIONAL_EXTERNAL = ['bufferutil', 'utf-8-validate', 'supports-color'];

const builtins = new Set(builtinModules);
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const production = new Set(Object.keys(pkg.dependencies ?? {}));

const result = await build({
  entryPoints: [entry],
  outfile,
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node24',
  external: OPTIONAL_EXTERNAL,
  // A CommonJS script has no import.meta: its URL comes from the `__filename` the entry passes.
  banner: { js: "var __volumescopeBundleUrl = require('node:url').pathToFileURL(__filename).href;" },
  define: { 'import.meta.url': '__volumescopeBundleUrl' },
  charset: 'ascii',
  // The packages' license comments go to agent.cjs.LEGAL.txt (kept in the image with dist/): one has non-ASCII names.
  legalComments: 'linked',
  minifyWhitespace: true,
  minifySyntax: true,
  sourcemap: 'linked',
  sourcesContent: false,
  metafile: true,
  logLevel: 'warning',
  plugins: [keepSourceLocations, builtinsAsRequire],
});

const packageName = (specifier) => {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
};
const isPackage = (specifier) => !specifier.startsWith('node:') && !builtins.has(specifier) && !specifier.startsWith('.') && !specifier.startsWith('/') && !specifier.startsWith('<');
// The packages repository files import (bundled or not); the packages' own dependencies are theirs.
const imported = new Set();
for (const [file, input] of Object.entries(result.metafile.inputs)) {
  if (file.split('/').includes('node_modules')) continue;
  for (const imp of input.imports) {
    const specifier = imp.original ?? imp.path;
    if (isPackage(specifier)) imported.add(packageName(specifier));
  }
}
const missing = [...imported].filter((name) => !production.has(name)).sort();
if (missing.length > 0) {
  console.error(`bundle-agent: the agent imports ${missing.join(', ')}, not in package.json "dependencies" (the image installs those only)`);
  process.exit(1);
}
// The entry reads the bundle as latin1 (no UTF-8 decoding), which is only right for ASCII.
const bundled = readFileSync(outfile);
const nonAscii = bundled.findIndex((byte) => byte > 0x7f);
if (nonAscii !== -1) {
  console.error(`bundle-agent: ${relative(root, outfile)} has a non-ASCII byte at offset ${nonAscii}; the entry reads it as latin1`);
  process.exit(1);
}
const hash = createHash('sha256').update(bundled).digest('hex').slice(0, 16);
const entrySource = readFileSync(join(root, 'deploy', 'image', 'agent-entry.mjs'), 'utf8');
if (!entrySource.includes("'__VOLUMESCOPE_BUNDLE_HASH__'")) {
  console.error('bundle-agent: deploy/image/agent-entry.mjs lost its bundle hash placeholder');
  process.exit(1);
}
writeFileSync(entryOut, entrySource.replace("'__VOLUMESCOPE_BUNDLE_HASH__'", JSON.stringify(hash).replaceAll('"', "'")));
console.log(`bundle-agent: ${relative(root, entryOut)} and ${relative(root, outfile)} (packages bundled: ${[...imported].sort().join(', ')}; optional, outside: ${OPTIONAL_EXTERNAL.join(', ')})`);
