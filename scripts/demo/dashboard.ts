/**
 * The dashboard process of a local stack (`next start` on the existing build), told about its
 * agents through the environment form of lib/dashboard/agents-config.ts (`VOLUMESCOPE_AGENTS`,
 * `VOLUMESCOPE_AGENT_TOKENS`). Used by the embedded demo's stack (stack.ts) and by the cluster
 * demo (scripts/cluster/demo.ts). The build itself is made by the entry scripts before
 * (scripts/dashboard-build.mjs): a build is never started from here.
 */
import { join } from 'node:path';
import { ManagedProcess, childEnv, httpStatus, waitUntil } from './process.ts';

/** An agent as the dashboard lists it: its name (the `<node>` of the URLs), API URL and token file. */
export interface DashboardAgent {
  readonly name: string;
  readonly url: string;
  readonly tokenFile: string;
}

/**
 * The dashboard's environment: the agents in the variables, nothing that would override them,
 * and the address it listens on (`VOLUMESCOPE_LISTEN_HOST`: on a loopback address the demo opens
 * without a login step, lib/dashboard/auth/auth-settings.ts). `extra` is added last (tests).
 */
export function dashboardEnv(agents: readonly DashboardAgent[], listenHost?: string, extra: Readonly<Record<string, string>> = {}): NodeJS.ProcessEnv {
  const env = childEnv({
    NEXT_TELEMETRY_DISABLED: '1',
    ...(listenHost === undefined ? {} : { VOLUMESCOPE_LISTEN_HOST: listenHost }),
    VOLUMESCOPE_AGENTS: agents.map((a) => `${a.name}=${a.url}`).join(','),
    VOLUMESCOPE_AGENT_TOKENS: agents.map((a) => `${a.name}=${a.tokenFile}`).join(','),
  });
  // The file form and discovery may not be combined with the variables.
  delete env['VOLUMESCOPE_DASHBOARD_CONFIG'];
  delete env['VOLUMESCOPE_DISCOVERY'];
  delete env['PORT'];
  return { ...env, ...extra };
}

/** The dashboard's port: `PORT` (default 3000); throws when it is not a port number. */
export function dashboardPort(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env['PORT'] ?? '3000';
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`PORT=${JSON.stringify(raw)} is not a port number (1-65535)`);
  return port;
}

export interface StartDashboardOptions {
  readonly repoRoot: string;
  readonly host: string;
  readonly port: number;
  readonly logFile: string;
  readonly agents: readonly DashboardAgent[];
  /** More environment (e.g. login settings); wins over the defaults. */
  readonly env?: Readonly<Record<string, string>>;
}

/**
 * Starts `next start` and resolves once `/login` answers 200 (it does with and without a session;
 * `/` may send to it); rejects when it exits first or after
 * 60 s, with the process stopped again.
 */
export async function startDashboard(o: StartDashboardOptions): Promise<ManagedProcess> {
  const url = `http://${o.host}:${String(o.port)}`;
  const proc = ManagedProcess.start({
    name: 'dashboard',
    args: [join(o.repoRoot, 'node_modules', 'next', 'dist', 'bin', 'next'), 'start', '-H', o.host, '-p', String(o.port)],
    cwd: o.repoRoot,
    env: dashboardEnv(o.agents, o.host, o.env),
    logFile: o.logFile,
  });
  try {
    await waitUntil(`the dashboard answers on ${url}/login`, async () => (await httpStatus(`${url}/login`)) === 200, { deadlineMs: 60_000, process: proc });
  } catch (err) {
    await proc.stop(10_000);
    throw err;
  }
  return proc;
}
