/**
 * Logging in, in Chromium, on a second dashboard of the e2e stack that has no local session
 * (`VOLUMESCOPE_LOCAL_SESSION=off`, as a dashboard reachable from elsewhere), against the same
 * agents:
 *
 * - OIDC: a real OpenID provider (the certified `oidc-provider` package) runs in this worker
 *   process with its development login pages; the dashboard logs in with authorization code +
 *   PKCE and keeps the ID token in its sealed session cookie. The test captures every token the
 *   provider issues (a middleware on its token endpoint) and the token guard checks that none of
 *   them reaches the browser. The standalone agents only know their static token (there is no
 *   API server here to review an ID token), so after login they answer 401 and the page says so;
 *   the review of a user's token for real is in e2e/cluster/dashboard-login.test.ts.
 * - Token login: the form, and its refusal when the dashboard has no Kubernetes API to review
 *   the token with.
 * - The session cookie: httpOnly, SameSite=Strict, expiring; logout removes it.
 * - The CSRF and DNS-rebinding gate (proxy.ts) on the stack's own dashboard: a POST without
 *   Origin, a cross-site form POST, a request without the custom header, a rebinding Host.
 */
import { createServer, request as httpRequest, type Server } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Provider from 'oidc-provider';
import { startDashboard } from '../scripts/demo/dashboard.ts';
import { freePort, type ManagedProcess } from '../scripts/demo/process.ts';
import { LOOPBACK } from '../scripts/demo/stack.ts';
import { expect, guardToken, test } from './fixtures.ts';
import { stackInfo } from './stack-info.ts';

const REPO_ROOT = fileURLToPath(new URL('../', import.meta.url));
const CLIENT_ID = 'volumescope-e2e';

let provider: { server: Server; issuer: string; issued: string[] } | null = null;
let dashboard: { proc: ManagedProcess; url: string } | null = null;

/** The OpenID provider on a free loopback port; every token it issues is kept in `issued`. */
async function startProvider(redirectUri: string): Promise<{ server: Server; issuer: string; issued: string[] }> {
  const port = await freePort(LOOPBACK);
  const issuer = `http://${LOOPBACK}:${String(port)}`;
  const issued: string[] = [];
  const oidc = new Provider(issuer, {
    clients: [{ client_id: CLIENT_ID, token_endpoint_auth_method: 'none', redirect_uris: [redirectUri], grant_types: ['authorization_code'], response_types: ['code'] }],
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'], groups: ['groups'] },
    scopes: ['openid', 'email', 'profile', 'groups'],
    conformIdTokenClaims: false, // the email and groups in the ID token itself, as Dex and Keycloak put them
    cookies: { keys: ['e2e-cookie-key-0123456789abcdef'] },
    findAccount: (_ctx, id) =>
      Promise.resolve({
        accountId: id,
        claims: () => Promise.resolve({ sub: id, email: `${id}@example.com`, email_verified: true, name: id, groups: ['volumescope-operators'] }),
      }),
  });
  oidc.use(async (ctx, next) => {
    await next();
    if (ctx.path === '/token' && typeof ctx.body === 'object' && ctx.body !== null) {
      for (const key of ['id_token', 'access_token', 'refresh_token']) {
        const value = (ctx.body as Record<string, unknown>)[key];
        if (typeof value === 'string') issued.push(value);
      }
    }
  });
  const handle = oidc.callback();
  const server = createServer((req, res) => {
    void handle(req, res);
  });
  await new Promise<void>((resolve) => server.listen(port, LOOPBACK, resolve));
  return { server, issuer, issued };
}

test.beforeAll(async () => {
  const port = await freePort(LOOPBACK);
  const url = `http://${LOOPBACK}:${String(port)}`;
  provider = await startProvider(`${url}/api/auth/oidc/callback`);
  const info = stackInfo();
  const proc = await startDashboard({
    repoRoot: REPO_ROOT,
    host: LOOPBACK,
    port,
    logFile: join(info.baseDir, 'dashboard-login.log'),
    agents: info.nodes.map((n) => ({ name: n.name, url: n.url, tokenFile: n.tokenFile })),
    env: {
      VOLUMESCOPE_LOCAL_SESSION: 'off',
      VOLUMESCOPE_OIDC_ISSUER_URL: provider.issuer,
      VOLUMESCOPE_OIDC_CLIENT_ID: CLIENT_ID,
      VOLUMESCOPE_OIDC_SCOPES: 'openid email profile groups',
      // No Kubernetes API for token login: neither a kubeconfig nor a service account.
      KUBECONFIG: join(info.baseDir, 'no-such-kubeconfig'),
      HOME: info.baseDir,
    },
  });
  dashboard = { proc, url };
});

test.afterAll(async () => {
  await dashboard?.proc.stop(10_000);
  await new Promise<void>((resolve) => {
    if (provider === null) resolve();
    else
      provider.server.close(() => {
        resolve();
      });
  });
});

function loginDashboard(): string {
  if (dashboard === null) throw new Error('the login dashboard did not start');
  return dashboard.url;
}

test.describe('login', () => {
  test('without a session every page sends to the login page, and the API answers 401', async ({ page, request }) => {
    const base = loginDashboard();
    await page.goto(`${base}/nodes/e2e-node-a`);
    await expect(page).toHaveURL(`${base}/login?next=%2Fnodes%2Fe2e-node-a`);
    await expect(page.getByRole('heading', { name: 'Log in to VolumeScope' })).toBeVisible();
    const api = await request.get(`${base}/api/agents/e2e-node-a/snapshot`);
    expect(api.status()).toBe(401);
    expect(((await api.json()) as { dashboardError: { code: string } }).dashboardError.code).toBe('not-logged-in');
    const session = await request.get(`${base}/api/auth/session`);
    expect(await session.json()).toEqual({ session: null, login: { token: true, oidc: true, local: false } });
  });

  test('OIDC: authorization code with PKCE against a real provider; the session cookie is httpOnly, Strict and expires; no token reaches the browser; logout ends it', async ({ page, context }) => {
    const base = loginDashboard();
    await page.goto(`${base}/nodes/e2e-node-a`);
    await page.getByRole('link', { name: 'Log in with OpenID Connect' }).click();
    // The provider's own login and consent pages.
    await expect(page).toHaveURL(new RegExp(`^${provider?.issuer ?? '-'}/interaction/`));
    await page.locator('input[name="login"]').fill('alice');
    await page.locator('input[name="password"]').fill('any password');
    await page.getByRole('button', { name: 'Sign-in' }).click();
    await page.getByRole('button', { name: 'Continue' }).click();
    // Back on the dashboard, on the page the login started from.
    await expect(page).toHaveURL(`${base}/nodes/e2e-node-a`);
    await expect(page.getByText('Logged in as')).toContainText('alice@example.com');

    const issued = provider?.issued ?? [];
    expect(issued.length, 'the provider issued an ID token and an access token').toBeGreaterThanOrEqual(2);
    for (const [i, token] of issued.entries()) guardToken(`OIDC token ${String(i)}`, token);

    const cookies = await context.cookies(base);
    const session = cookies.find((c) => c.name === 'volumescope-session');
    expect(session, 'the session cookie').toBeDefined();
    expect(session?.httpOnly).toBe(true);
    expect(session?.sameSite).toBe('Strict');
    expect(session?.expires ?? -1).toBeGreaterThan(Date.now() / 1000);
    for (const token of issued) expect(session?.value.includes(token)).toBe(false);
    // The flow cookie is gone once the login completed.
    expect(cookies.find((c) => c.name === 'volumescope-oidc')).toBeUndefined();
    // Page JavaScript cannot read the session.
    expect(await page.evaluate(() => document.cookie)).not.toContain('volumescope-session');

    // The standalone agents know only their static token: they refuse the ID token, and the
    // page says the agent refused (not a crash, not the demo's rights).
    const snapshot = await page.request.get(`${base}/api/agents/e2e-node-a/snapshot`);
    expect(snapshot.status()).toBe(502);
    expect(((await snapshot.json()) as { dashboardError: { code: string } }).dashboardError.code).toBe('agent-unauthorized');

    await page.getByRole('button', { name: 'Log out' }).click();
    await expect(page).toHaveURL(`${base}/login`);
    expect((await context.cookies(base)).find((c) => c.name === 'volumescope-session')).toBeUndefined();
    await page.goto(`${base}/`);
    await expect(page).toHaveURL(`${base}/login?next=%2F`);
  });

  test('token login: the form says why a token cannot be used when the dashboard has no Kubernetes API to review it', async ({ page }) => {
    const base = loginDashboard();
    const token = 'e2e-user-token-that-is-never-echoed-0123456789';
    guardToken('the pasted token', token);
    await page.goto(`${base}/login`);
    await page.getByLabel('Kubernetes bearer token').fill(token);
    await page.getByRole('button', { name: 'Log in with token' }).click();
    await expect(page.getByRole('alert').filter({ hasText: 'token login needs the Kubernetes API' })).toBeVisible();
    await expect(page).toHaveURL(`${base}/login`);
  });
});

test.describe('CSRF and DNS rebinding (the stack’s dashboard, with its local session)', () => {
  const unmountPath = '/api/agents/e2e-node-a/unmount';
  const body = JSON.stringify({ podUid: '00000000-0000-0000-0000-000000000000', volume: 'nothing' });

  /** A raw POST from the test process (no browser headers unless given). */
  async function post(url: string, headers: Record<string, string>): Promise<Response> {
    return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body, redirect: 'manual' });
  }

  test('a POST without Origin is refused 403, even with the session cookie and the custom header', async ({ page, context }) => {
    const base = stackInfo().dashboardUrl;
    await page.goto(`${base}/`);
    const cookie = (await context.cookies(base)).find((c) => c.name === 'volumescope-session');
    expect(cookie, 'the local session cookie the first page set').toBeDefined();
    const res = await post(`${base}${unmountPath}`, { cookie: `volumescope-session=${cookie?.value ?? ''}`, 'x-volumescope-request': '1' });
    expect(res.status).toBe(403);
    expect(await res.text()).toContain('no Origin header');
  });

  test('a same-origin POST without the custom header, or without the session cookie, is refused', async ({ page, context }) => {
    const base = stackInfo().dashboardUrl;
    await page.goto(`${base}/`);
    const cookie = (await context.cookies(base)).find((c) => c.name === 'volumescope-session')?.value ?? '';
    const withoutHeader = await post(`${base}${unmountPath}`, { cookie: `volumescope-session=${cookie}`, origin: base });
    expect(withoutHeader.status).toBe(403);
    expect(await withoutHeader.text()).toContain('x-volumescope-request');
    const withoutCookie = await post(`${base}${unmountPath}`, { origin: base, 'x-volumescope-request': '1' });
    expect(withoutCookie.status).toBe(401);
    // With all three, the request reaches the agent (which answers for the unknown pod).
    const complete = await post(`${base}${unmountPath}`, { cookie: `volumescope-session=${cookie}`, origin: base, 'x-volumescope-request': '1' });
    expect([400, 404, 409]).toContain(complete.status);
  });

  test('a cross-site form POST from another origin is refused in the browser', async ({ page }) => {
    const base = stackInfo().dashboardUrl;
    await page.goto(`${base}/`); // the local session cookie exists now
    const evil = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(`<form id="f" method="post" action="${base}/api/agents/e2e-node-a/operations/retry" enctype="text/plain"><input name='{"volume":"x","a":"' value='"}'></form><script>document.getElementById('f').submit()</script>`);
    });
    await new Promise<void>((resolve) => evil.listen(0, 'localhost', resolve));
    try {
      const address = evil.address();
      const evilUrl = `http://localhost:${String(typeof address === 'object' && address !== null ? address.port : 0)}/`;
      const answer = page.waitForResponse((r) => r.url().endsWith('/api/agents/e2e-node-a/operations/retry'));
      await page.goto(evilUrl);
      const response = await answer;
      expect(response.status()).toBe(403);
      expect(await response.text()).toContain('refused as a possible cross-site request');
    } finally {
      await new Promise<void>((resolve) => {
        evil.close(() => {
          resolve();
        });
      });
    }
  });

  test('a rebinding Host (a foreign name pointing at the dashboard) is refused before any handler', async ({ page }) => {
    const base = new URL(stackInfo().dashboardUrl);
    // The same address under its own name answers.
    expect((await page.goto(base.href))?.status()).toBe(200);
    for (const path of ['/', '/api/agents', '/api/agents/e2e-node-a/snapshot']) {
      // fetch() does not let a caller set Host; node:http does.
      const res = await new Promise<{ status: number; text: string }>((resolve, reject) => {
        const req = httpRequest({ host: base.hostname, port: base.port, path, headers: { host: `rebind.example:${base.port}` } }, (answer) => {
          let text = '';
          answer.on('data', (c: Buffer) => {
            text += c.toString();
          });
          answer.on('end', () => {
            resolve({ status: answer.statusCode ?? 0, text });
          });
        });
        req.on('error', reject);
        req.end();
      });
      expect(res.status, path).toBe(403);
      expect(res.text, path).toContain('does not answer to that host name');
    }
  });
});
