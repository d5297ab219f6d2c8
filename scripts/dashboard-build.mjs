// Builds the dashboard (`next build`) when its build is missing or stale; used by `npm start`
// (scripts/start.mjs), the e2e tests (scripts/run-e2e.mjs) and `npm run bench:ui`.
//
// Stale means any of:
// - `.next/BUILD_ID` is missing;
// - a file the dashboard is built from is newer than BUILD_ID: everything below app/, components/
//   and public/, every file those import through relative imports (lib/api, lib/dashboard, … found
//   by following the import statements, so edits to agent or engine code do not force a
//   rebuild), next.config.js, proxy.ts, instrumentation.ts and what they import, tsconfig.json
//   and package-lock.json;
// - VOLUMESCOPE_FRAME_ANCESTORS differs from the value the build was made with. Next evaluates
//   next.config's headers() at build time, so the framing policy is baked into the build; the
//   value used is recorded in `.next/volumescope-build.json` after every build made here.
//
// Plain JavaScript (it runs before anything TypeScript is set up); `@ts-check` lets tsc check the
// JSDoc types.
// @ts-check
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseFrameAncestors } from '../lib/dashboard/frame-ancestors.js';

export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const NEXT_BIN = join(REPO_ROOT, 'node_modules', 'next', 'dist', 'bin', 'next');
const BUILD_ID = join(REPO_ROOT, '.next', 'BUILD_ID');
/** Written after each build made here: the build-time settings Next baked in. */
export const BUILD_INFO = join(REPO_ROOT, '.next', 'volumescope-build.json');

const ROOT_DIRS = ['app', 'components', 'public'];
// proxy.ts (the request gate) and instrumentation.ts (the start checks) are Next entry points too.
const ROOT_FILES = ['next.config.js', 'proxy.ts', 'instrumentation.ts', 'tsconfig.json', 'package-lock.json'];
const CODE = /\.(?:[cm]?[jt]sx?)$/;
// `from '…'`, `import '…'` and `import('…')` with a relative specifier.
const RELATIVE_IMPORT = /(?:\bfrom\s*|\bimport\s*\(?\s*)['"](\.{1,2}\/[^'"]+)['"]/g;

/**
 * Every file below `dir`, without tests and test helpers.
 * @param {string} dir
 * @returns {string[]}
 */
function filesBelow(dir) {
  if (!existsSync(dir)) return [];
  /** @type {string[]} */
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (/\.test\.tsx?$/.test(entry.name) || entry.name === 'testing' || entry.name === 'node_modules') continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesBelow(path));
    else out.push(path);
  }
  return out;
}

/**
 * The files the dashboard build reads: the roots and, transitively, their relative imports.
 * @returns {string[]}
 */
export function dashboardSources() {
  const queue = [...ROOT_DIRS.flatMap((d) => filesBelow(join(REPO_ROOT, d))), ...ROOT_FILES.map((f) => join(REPO_ROOT, f))];
  const seen = new Set();
  while (queue.length > 0) {
    const file = /** @type {string} */ (queue.pop());
    if (seen.has(file) || !existsSync(file)) continue;
    seen.add(file);
    if (!CODE.test(file)) continue;
    for (const m of readFileSync(file, 'utf8').matchAll(RELATIVE_IMPORT)) {
      const spec = /** @type {string} */ (m[1]);
      const base = join(dirname(file), spec);
      // Specifiers here carry their extension; the others are resolved as the bundler would.
      const found = ['', '.ts', '.tsx', '.js', '.mjs', '/index.ts', '/index.tsx', '/index.js'].map((ext) => base + ext).find((p) => existsSync(p) && statSync(p).isFile());
      if (found !== undefined) queue.push(found);
    }
  }
  return [...seen];
}

/**
 * The newest of `files` by modification time.
 * @param {readonly string[]} files
 * @returns {{ mtimeMs: number, file: string }}
 */
function newest(files) {
  let best = { mtimeMs: 0, file: '' };
  for (const file of files) {
    const mtimeMs = statSync(file).mtimeMs;
    if (mtimeMs > best.mtimeMs) best = { mtimeMs, file };
  }
  return best;
}

/**
 * The normalised form of a VOLUMESCOPE_FRAME_ANCESTORS value (what Next would bake in).
 * Throws the FrameAncestorsError of lib/dashboard/frame-ancestors.js for a bad value.
 * @param {string | undefined} value
 */
export function normalisedFrameAncestors(value) {
  return parseFrameAncestors(value);
}

/**
 * Why the build must be (re)made, or null when it is current.
 * @param {{ frameAncestors: string | undefined | null }} want `null`: any framing policy will do.
 * @returns {string | null}
 */
export function buildStaleReason(want) {
  if (!existsSync(BUILD_ID)) return 'the dashboard has not been built yet';
  const builtAt = statSync(BUILD_ID).mtimeMs;
  const n = newest(dashboardSources());
  if (n.mtimeMs > builtAt) return `${relative(REPO_ROOT, n.file)} changed after the last build`;
  if (want.frameAncestors === null) return null;
  const wanted = normalisedFrameAncestors(want.frameAncestors);
  /** @type {{ frameAncestors?: unknown }} */
  let info;
  try {
    info = JSON.parse(readFileSync(BUILD_INFO, 'utf8'));
  } catch {
    return 'the build has no record of its VOLUMESCOPE_FRAME_ANCESTORS';
  }
  if (info.frameAncestors !== wanted) {
    return `VOLUMESCOPE_FRAME_ANCESTORS is now ${JSON.stringify(wanted)}, the build has ${JSON.stringify(info.frameAncestors)}`;
  }
  return null;
}

/**
 * Builds the dashboard when needed (see the module comment), printing why and how long it took.
 * `frameAncestors` is the VOLUMESCOPE_FRAME_ANCESTORS value the build must carry (undefined: the
 * default 'self'); `null` accepts any existing build whose sources are current.
 * Throws when VOLUMESCOPE_FRAME_ANCESTORS is malformed or `next build` fails.
 * @param {{ frameAncestors: string | undefined | null, log?: (line: string) => void }} opts
 */
export function ensureDashboardBuild(opts) {
  const log = opts.log ?? ((line) => console.log(line));
  const reason = buildStaleReason({ frameAncestors: opts.frameAncestors });
  if (reason === null) return;
  const frameAncestors = opts.frameAncestors ?? process.env.VOLUMESCOPE_FRAME_ANCESTORS;
  const value = normalisedFrameAncestors(frameAncestors);
  log(`volumescope: building the dashboard (${reason}; about 15-30 s)…`);
  const started = performance.now();
  /** @type {NodeJS.ProcessEnv} */
  const env = { ...process.env, NEXT_TELEMETRY_DISABLED: '1' };
  if (frameAncestors === undefined) delete env.VOLUMESCOPE_FRAME_ANCESTORS;
  else env.VOLUMESCOPE_FRAME_ANCESTORS = frameAncestors;
  delete env.NODE_OPTIONS;
  // The build's output goes to stderr: the benchmarks that build first print their JSON on stdout.
  const build = spawnSync(process.execPath, [NEXT_BIN, 'build'], { cwd: REPO_ROOT, stdio: ['inherit', 2, 2], env });
  if (build.status !== 0) throw new Error(`next build failed (exit ${build.status ?? build.signal ?? 'unknown'}); its output is above`);
  writeFileSync(BUILD_INFO, `${JSON.stringify({ frameAncestors: value, builtAt: new Date().toISOString() }, null, 2)}\n`);
  log(`volumescope: dashboard built in ${Math.round((performance.now() - started) / 1000)} s`);
}
