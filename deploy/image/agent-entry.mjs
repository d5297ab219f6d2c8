// The agent's entry in the container image: deploy/image/bundle-agent.mjs copies this file to
// dist/agent.mjs, beside the bundle dist/agent.cjs, with the bundle's content hash filled in. It
// compiles and runs the bundle with node:vm instead of importing it, for one reason: a code cache
// that holds the functions a start actually compiles.
//
// Node's own compile cache (NODE_COMPILE_CACHE) stores a module's code cache right after the module
// is compiled, when V8 has compiled little more than its top level. Most of the bundle's code is
// in functions V8 compiles lazily on their first call (the bodies of the bundled CommonJS packages
// and of the API client's modules among them), so with that cache every start still compiled
// them: about 60 ms of a restart's main
// thread in a CPU profile (bench:cluster --agent-cpu-prof). A vm.Script can produce its cache
// later: `createCachedData()` after the agent has run for a while includes every function compiled
// until then. Measured on Node 24 (2-core machine): `--help` 155 ms with the ES module bundle and
// Node's cache, 109 ms with this.
//
// The cache goes into Node's compile cache directory (NODE_COMPILE_CACHE; none when it is unset,
// and then nothing is written), named by the bundle's hash and the Node version. V8 checks the rest
// (its version, its flags, the source's length) and rejects a cache that does not fit; a rejected
// or missing cache is written anew once the agent has run for WRITE_CACHE_AFTER_MS. Writing it is
// an optimisation only: any failure to read or write it is ignored.
//
// The bundle gets the module wrapper's arguments as a CommonJS module would, except `__dirname`,
// which stays undefined as in the ES module bundle before it (bundle-agent.mjs says why).
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire, getCompileCacheDir } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Script, constants } from 'node:vm';

const BUNDLE = fileURLToPath(new URL('./agent.cjs', import.meta.url));
/** Filled in by bundle-agent.mjs: the first 16 hex digits of the bundle's SHA-256. */
const BUNDLE_HASH = '__VOLUMESCOPE_BUNDLE_HASH__';
/**
 * Long enough for a start to have listed, reconstructed and set up every volume, and to have
 * served its API. VOLUMESCOPE_CODE_CACHE_DELAY_MS overrides it (tests and benchmarks).
 */
const WRITE_CACHE_AFTER_MS = cacheDelayMs(process.env.VOLUMESCOPE_CODE_CACHE_DELAY_MS) ?? 30_000;

// Node maps stack traces through source maps (--enable-source-maps) only for code its module
// loader loaded, not for a vm.Script: a debugging session that asks for them gets the bundle
// required as a CommonJS module instead, without this code cache (and with `__dirname` defined).
if (process.sourceMapsEnabled) {
  createRequire(import.meta.url)(BUNDLE);
} else {
  runWithCodeCache();
}

/** Compiles the bundle with the code cache (read, and written when missing or rejected) and runs it. */
function runWithCodeCache() {
  const cacheDir = getCompileCacheDir();
  const cacheFile = cacheDir === undefined ? null : join(cacheDir, `volumescope-agent-${BUNDLE_HASH}-${process.version}.v8cache`);
  let cachedData;
  if (cacheFile !== null) {
    try {
      cachedData = readFileSync(cacheFile);
    } catch {
      cachedData = undefined;
    }
  }
  // The bundle is ASCII (bundle-agent.mjs checks): latin1 makes V8's one-byte string without decoding UTF-8.
  // The wrapper's own line is line -1, so that positions in stack traces are the bundle's (and its source map's).
  const script = new Script(`(function (exports, require, module, __filename, __dirname) {\n${readFileSync(BUNDLE, 'latin1')}\n})`, {
    filename: BUNDLE,
    lineOffset: -1,
    cachedData,
    importModuleDynamically: constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
  });
  if (cacheFile !== null && (cachedData === undefined || script.cachedDataRejected === true)) {
    setTimeout(() => {
      const tmp = `${cacheFile}.${process.pid}.tmp`;
      try {
        writeFileSync(tmp, script.createCachedData());
        renameSync(tmp, cacheFile);
      } catch {
        // No cache: the next start compiles as this one did.
      }
    }, WRITE_CACHE_AFTER_MS).unref();
  }
  const bundleModule = { exports: {} };
  script.runInThisContext()(bundleModule.exports, createRequire(BUNDLE), bundleModule, BUNDLE, undefined);
}

/** A whole number of milliseconds, or undefined when unset; anything else stops the start, naming the variable. */
function cacheDelayMs(value) {
  if (value === undefined || value === '') return undefined;
  const ms = Number(value);
  if (!Number.isInteger(ms) || ms < 0) {
    process.stderr.write(`volumescope-agent: VOLUMESCOPE_CODE_CACHE_DELAY_MS must be a whole number of milliseconds, got ${JSON.stringify(value)}\n`);
    process.exit(2);
  }
  return ms;
}
