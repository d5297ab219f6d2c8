/**
 * Cross-origin reads in Chromium, the way the Headlamp plugin makes them
 * (components/headlamp/volumescope-source.ts): a page on another origin of the same site reads
 * the dashboard's snapshot route with `fetch(…, { credentials: 'include' })`, and the browser
 * sends the `SameSite=Strict` session cookie because the two origins are one site (`localhost`,
 * two ports). A second dashboard of the e2e stack lists that origin in VOLUMESCOPE_CORS_ORIGINS
 * (lib/dashboard/auth/cross-origin-reads.ts); an unlisted origin cannot read, and an action from
 * the listed one never gets through.
 */
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startDashboard } from '../scripts/demo/dashboard.ts';
import { freePort, type ManagedProcess } from '../scripts/demo/process.ts';
import { LOOPBACK } from '../scripts/demo/stack.ts';
import { expect, test } from './fixtures.ts';
import { stackInfo } from './stack-info.ts';

const REPO_ROOT = fileURLToPath(new URL('../', import.meta.url));
const NODE = 'e2e-node-a';

let dashboard: { proc: ManagedProcess; port: number } | null = null;
let pages: { server: Server; port: number } | null = null;

/** A blank page on every host name (the stand-in for Headlamp's origin). */
async function startPageServer(): Promise<{ server: Server; port: number }> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><title>Headlamp stand-in</title><p>plugin host</p>');
  });
  await new Promise<void>((resolve) => server.listen(0, LOOPBACK, resolve));
  const address = server.address();
  return { server, port: typeof address === 'object' && address !== null ? address.port : 0 };
}

test.beforeAll(async () => {
  pages = await startPageServer();
  const port = await freePort(LOOPBACK);
  const info = stackInfo();
  const proc = await startDashboard({
    repoRoot: REPO_ROOT,
    host: LOOPBACK,
    port,
    logFile: join(info.baseDir, 'dashboard-cors.log'),
    agents: info.nodes.map((n) => ({ name: n.name, url: n.url, tokenFile: n.tokenFile })),
    env: { VOLUMESCOPE_CORS_ORIGINS: `http://localhost:${String(pages.port)}` },
  });
  dashboard = { proc, port };
});

test.afterAll(async () => {
  await dashboard?.proc.stop(10_000);
  await new Promise<void>((resolve) => {
    if (pages === null) resolve();
    else
      pages.server.close(() => {
        resolve();
      });
  });
});

function ports(): { dash: number; page: number } {
  if (dashboard === null || pages === null) throw new Error('the CORS dashboard did not start');
  return { dash: dashboard.port, page: pages.port };
}

/** What a `fetch` in the page gave: the status and snapshot seq, or the error's name. */
type Outcome = { status: number; seq: number | null } | { error: string };

test('a listed origin of the same site reads the snapshot with the session cookie; an unlisted one cannot; an action never passes', async ({ page }) => {
  const { dash, page: pagePort } = ports();
  const dashboardUrl = `http://localhost:${String(dash)}`;
  // The user's dashboard session: the local session cookie of a loopback dashboard (SameSite=Strict).
  await page.goto(`${dashboardUrl}/`);
  const cookies = await page.context().cookies(dashboardUrl);
  expect(cookies.find((c) => c.name === 'volumescope-session')?.sameSite).toBe('Strict');

  const read = (url: string) =>
    page.evaluate(async (u): Promise<Outcome> => {
      try {
        const res = await fetch(u, { credentials: 'include', headers: { Accept: 'application/json' } });
        const body = (await res.json()) as { seq?: number };
        return { status: res.status, seq: typeof body.seq === 'number' ? body.seq : null };
      } catch (err) {
        return { error: err instanceof Error ? err.name : String(err) };
      }
    }, url);

  await page.goto(`http://localhost:${String(pagePort)}/`);
  const listed = await read(`${dashboardUrl}/api/agents/${NODE}/snapshot`);
  expect('status' in listed ? listed.status : listed.error).toBe(200);
  expect('seq' in listed ? typeof listed.seq : 'none').toBe('number');

  // The action: a JSON POST with the CSRF header needs a preflight, which is never granted.
  const action = await page.evaluate(async (u): Promise<Outcome> => {
    try {
      const res = await fetch(u, { method: 'POST', credentials: 'include', headers: { 'Content-Type': 'application/json', 'X-VolumeScope-Request': '1' }, body: '{}' });
      return { status: res.status, seq: null };
    } catch (err) {
      return { error: err instanceof Error ? err.name : String(err) };
    }
  }, `${dashboardUrl}/api/agents/${NODE}/resync`);
  expect(action).toEqual({ error: 'TypeError' });

  // Another origin (another host name, so another origin of a port the list does not name).
  await page.goto(`http://127.0.0.1:${String(pagePort)}/`);
  expect(await read(`${dashboardUrl}/api/agents/${NODE}/snapshot`)).toEqual({ error: 'TypeError' });
});
