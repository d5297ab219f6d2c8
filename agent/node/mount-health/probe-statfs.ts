/**
 * The volume stats' statfs through the mount health checks' probe: one child process and one
 * hung-mount policy for both.
 *
 * - A path the health checks last found unhealthy (hung, not connected, …) is not touched for
 *   the stats: they report the health check's error until a check finds the path healthy again.
 *   A hung mount therefore costs the stats nothing, not one abandoned child per pass.
 * - A path checked healthy less than `maxAgeMs` ago gives the numbers of that check: the checks
 *   make statfs anyway. With the defaults (1,000 paths, each checked every 40 s; stats every 1m
 *   or more) the stats make no file system call at all.
 * - The other paths go to the probe in one request, at most one hung path waited for; their
 *   answers update the health entries ({@link MountHealthChecker.absorb}), so a hang the stats
 *   find is the health checks' finding too.
 *
 * Without periodic health checks (`health` null) every path goes to the probe.
 */
import type { Clock } from '../../../lib/clock/clock.ts';
import type { FsProbe, PathCheck, StatfsResult, StatfsSource } from '../fs-probe/fs-probe.ts';
import { classifyCheck, type MountHealthChecker } from './mount-health-checker.ts';

export interface ProbeStatfsOptions {
  probe: Pick<FsProbe, 'check'>;
  health: Pick<MountHealthChecker, 'entry' | 'usage' | 'absorb'> | null;
  clock: Clock;
  /** Per-path timeout of the probe's calls (the health checks' timeout). */
  timeoutMs: number;
}

export class ProbeStatfs implements StatfsSource {
  constructor(private readonly opts: ProbeStatfsOptions) {}

  async statfs(paths: readonly string[], maxAgeMs: number): Promise<Map<string, StatfsResult>> {
    const { health, timeoutMs } = this.opts;
    const out = new Map<string, StatfsResult>();
    const now = this.opts.clock.now();
    const ask: string[] = [];
    for (const path of paths) {
      const entry = health?.entry(path);
      const cached = health?.usage(path);
      if (entry !== undefined && entry.state !== 'healthy') out.set(path, { ok: false, durationMs: 0, error: entry.error ?? `the mount is ${entry.state}` });
      else if (cached !== undefined && now - cached.at < maxAgeMs) out.set(path, { ok: true, usage: cached.usage, durationMs: Math.round(cached.durationMs) });
      else ask.push(path);
    }
    if (ask.length === 0) return out;
    let results: PathCheck[];
    try {
      results = await this.opts.probe.check(ask, { perPathTimeoutMs: timeoutMs, maxHungPerCall: 1 });
    } catch (err) {
      results = ask.map((path) => ({ path, outcome: 'skipped', reason: err instanceof Error ? err.message : String(err) }));
    }
    health?.absorb(results);
    for (const r of results) {
      if (r.outcome === 'skipped') out.set(r.path, { ok: false, durationMs: 0, error: `statfs not tried: ${r.reason}` });
      else if (r.outcome === 'ok' && r.usage !== undefined) out.set(r.path, { ok: true, usage: r.usage, durationMs: Math.round(r.durationMs ?? 0) });
      else if (r.outcome === 'ok') out.set(r.path, { ok: false, durationMs: 0, error: 'the probe gave no statfs numbers' });
      else out.set(r.path, { ok: false, durationMs: r.outcome === 'hung' ? timeoutMs : 0, error: classifyCheck(r, timeoutMs).error ?? r.outcome });
    }
    return out;
  }
}
