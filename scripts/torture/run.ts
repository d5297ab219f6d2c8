/**
 * `npm run torture [-- --size=short|full] [--only=name,name]`: runs the torture campaigns one
 * after another and prints ONE JSON summary on stdout, `{ok, size, campaigns: [CampaignResult…]}`
 * (progress goes to stderr); exits 1 when a campaign failed, 2 for a bad flag.
 *
 * As root the run re-executes itself inside a private mount namespace (`unshare --mount
 * --propagation private`, scripts/mount-namespace.mjs), so the real tmpfs, bind and loop mounts
 * the campaigns make can never leak into the host. Each campaign gets a fresh work directory,
 * removed afterwards; anything still mounted below it is a failure of that campaign (and is
 * unmounted before the directory goes).
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, realpath } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { mountNamespaceCommand } from '../mount-namespace.mjs';
import type { Campaign, CampaignResult, CampaignSize } from './campaign.ts';
import { errorMessage } from '../../lib/volume/errors.ts';

const CAMPAIGN_NAMES = ['kill-churn', 'csi-fault-matrix', 'api-fuzz', 'malformed-manifests', 'soak'] as const;

class UsageError extends Error {
  override readonly name = 'UsageError';
}

interface RunArgs {
  size: CampaignSize;
  only: readonly string[] | null;
}

function parseArgs(argv: readonly string[]): RunArgs {
  let size: CampaignSize = 'full';
  let only: string[] | null = null;
  for (const arg of argv) {
    const m = /^--(size|only)=(.*)$/.exec(arg);
    if (m === null) throw new UsageError(`unknown argument ${JSON.stringify(arg)} (use --size=short|full, --only=${CAMPAIGN_NAMES.join(',')})`);
    if (m[1] === 'size') {
      if (m[2] !== 'short' && m[2] !== 'full') throw new UsageError(`--size: ${JSON.stringify(m[2])} is not short or full`);
      size = m[2];
    } else {
      only = (m[2] ?? '').split(',').filter((n) => n !== '');
      const unknown = only.filter((n) => !(CAMPAIGN_NAMES as readonly string[]).includes(n));
      if (unknown.length > 0 || only.length === 0) throw new UsageError(`--only: unknown campaign(s) ${JSON.stringify(unknown)}; known: ${CAMPAIGN_NAMES.join(', ')}`);
    }
  }
  return { size, only };
}

/** The campaigns, imported only here (inside the namespace), in the order they run. */
async function loadCampaigns(): Promise<Campaign[]> {
  const [{ killChurn }, { csiFaultMatrix }, { apiFuzz }, { malformedManifests }, { soak }] = await Promise.all([
    import('./kill-churn.ts'),
    import('./csi-fault-matrix.ts'),
    import('./api-fuzz.ts'),
    import('./malformed-manifests.ts'),
    import('./soak.ts'),
  ]);
  return [killChurn, csiFaultMatrix, apiFuzz, malformedManifests, soak];
}

function log(line: string): void {
  process.stderr.write(`torture: ${line}\n`);
}

/** Runs one campaign in its own work directory; a throw becomes a failed result. */
async function runCampaign(campaign: Campaign, size: CampaignSize): Promise<CampaignResult> {
  const { cleanUpTempDir } = await import('../../lib/mount-utils/testing/mount-test-env.ts');
  const workDir = await realpath(await mkdtemp(join(tmpdir(), `volumescope-torture-${campaign.name}-`)));
  const started = performance.now();
  log(`${campaign.name} (${size}) in ${workDir}`);
  let result: CampaignResult;
  try {
    result = await campaign.run({ size, workDir, log: (line) => {
        log(`${campaign.name}: ${line}`);
      } });
  } catch (err) {
    result = { name: campaign.name, ok: false, figures: {}, failures: [`the campaign threw: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`] };
  }
  let leaked: string[];
  try {
    leaked = await cleanUpTempDir(workDir);
  } catch (err) {
    leaked = [`cleanup failed: ${errorMessage(err)}`];
  }
  const durationMs = Math.round(performance.now() - started);
  const failures = [...result.failures, ...leaked.map((m) => `left mounted after the campaign: ${m}`)];
  log(`${campaign.name}: ${failures.length === 0 && result.ok ? 'ok' : `FAILED (${failures.length} failure(s))`} in ${(durationMs / 1000).toFixed(1)} s`);
  return { ...result, ok: result.ok && failures.length === 0, figures: { ...result.figures, durationMs }, failures };
}

async function main(argv: readonly string[]): Promise<number> {
  let args: RunArgs;
  try {
    args = parseArgs(argv);
  } catch (err) {
    process.stderr.write(`torture: ${errorMessage(err)}\n`);
    return 2;
  }
  const cmd = mountNamespaceCommand(['--import', 'tsx', fileURLToPath(import.meta.url), ...argv], process.env);
  if (cmd.mode === 'namespace' && process.env['VOLUMESCOPE_MOUNT_NS'] !== '1') {
    // Root outside the namespace: run again inside it; the inner run prints the summary.
    log(cmd.note);
    const r = spawnSync(cmd.file, cmd.args, { stdio: 'inherit', env: cmd.env });
    return r.status ?? 1;
  }
  if (cmd.mode === 'unprivileged') log(cmd.note);
  const selected = (await loadCampaigns()).filter((c) => args.only === null || args.only.includes(c.name));
  const campaigns: CampaignResult[] = [];
  for (const campaign of selected) campaigns.push(await runCampaign(campaign, args.size));
  const ok = campaigns.every((c) => c.ok);
  process.stdout.write(`${JSON.stringify({ ok, size: args.size, campaigns }, null, 2)}\n`);
  return ok ? 0 : 1;
}

const code = await main(process.argv.slice(2));
// Exit once stdout is flushed: a campaign's leftover timers or sockets must not keep the run alive.
process.stdout.write('', () => process.exit(code));
