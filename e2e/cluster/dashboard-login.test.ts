/**
 * Logging in to the dashboard with a Kubernetes token, and the dashboard acting as that user,
 * against a real kube-apiserver and an agent in webhook mode.
 *
 * The dashboard's code runs in-process (no build needed): its own Kubernetes client
 * configuration is a kubeconfig with the volumescope-dashboard ServiceAccount's token, as in the
 * deployed layout, and it has only deploy/'s rights (discovery). With it:
 *
 * - token login (`reviewOwnToken`, a SelfSubjectReview made with the pasted token) names the
 *   ServiceAccounts `viewer` and `operator` of this test, bound to deploy/'s ClusterRoles
 *   volumescope-viewer and volumescope-operator, and refuses a bogus token;
 * - the permissions the pages show (`nodePermissions`, SelfSubjectAccessReviews with the user's
 *   token) are the agent's: viewer get only, operator get and update;
 * - the agent proxy with a token session sends the user's token (`agentTokenFor`): the agent's
 *   TokenReview/SubjectAccessReview lets the viewer read and refuses its resync with 403 (passed
 *   through to the browser), and lets the operator act, recorded in the audit log under its name.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentContactRegistry, proxyAgentAction, proxyAgentSnapshot, type AgentProxyDeps } from '../../lib/dashboard/agent-proxy.ts';
import { agentTokenFor } from '../../lib/dashboard/auth/agent-credential.ts';
import { isKubeUserError, nodePermissions, processKubeConfig, reviewOwnToken } from '../../lib/dashboard/auth/kube-user.ts';
import type { Session } from '../../lib/dashboard/auth/session.ts';
import type { ClusterAgent } from '../../scripts/cluster/cluster.ts';
import { createToken, createViewerAndOperator } from './user-accounts.ts';
import { cluster, versionTag } from './cluster-context.ts';

const API = versionTag('kube-apiserver');
const NS = 'dashboard-login-test';
const NODE_NAME = 'agent-login';

let agent: ClusterAgent;
const tokens = { viewer: '', operator: '' };
const savedKubeconfig = process.env['KUBECONFIG'];

/** The dashboard proxy's dependencies with `session` as the request's session. */
function proxyDeps(session: Session): AgentProxyDeps {
  return {
    config: () => ({ agents: [{ name: NODE_NAME, url: agent.facts.url, tokenFile: agent.facts.tokenFile }], source: 'env' }),
    fetch: (input, init) => fetch(input, init),
    readToken: (a) => agentTokenFor(session, a, () => Promise.reject(new Error('a token session must not read the token file'))),
    now: () => Date.now(),
    registry: new AgentContactRegistry(),
    onShutdown: () => () => undefined,
    connectTimeoutMs: 10_000,
    actionTimeoutMs: 30_000,
  };
}

/** Logs in as the dashboard does: the real SelfSubjectReview, then a token session. */
async function login(token: string): Promise<Session> {
  const { k8s, kubeConfig } = await processKubeConfig();
  const user = await reviewOwnToken(k8s, kubeConfig, token);
  return { kind: 'token', username: user.username, groups: user.groups, token, expiresAt: Math.floor(Date.now() / 1000) + 3600 };
}

beforeAll(async () => {
  Object.assign(tokens, await createViewerAndOperator(NS));
  // The dashboard's own client configuration: its ServiceAccount, as deployed.
  process.env['KUBECONFIG'] = cluster.tokenKubeconfig('dashboard-login', await createToken('volumescope-dashboard', 'volumescope'));
  agent = await cluster.startAgent({ nodeName: NODE_NAME, args: ['--authentication-token-webhook', '--authorization-mode=Webhook'] });
});

afterAll(async () => {
  if (savedKubeconfig === undefined) delete process.env['KUBECONFIG'];
  else process.env['KUBECONFIG'] = savedKubeconfig;
  const exit = await agent.stop();
  expect(exit?.code, await agent.log()).toBe(0);
});

describe(`dashboard token login and acting as the user (${API})`, () => {
  it(`token login names the token's user (SelfSubjectReview with that token) and refuses a bogus one (${API})`, async () => {
    const viewer = await login(tokens.viewer);
    expect(viewer.username).toBe(`system:serviceaccount:${NS}:viewer`);
    expect(viewer.groups).toEqual(expect.arrayContaining(['system:serviceaccounts', `system:serviceaccounts:${NS}`, 'system:authenticated']));
    const err = await login('not-a-token').catch((e: unknown) => e);
    expect(isKubeUserError(err) && err.reason).toBe('invalid');
    // A well-formed JWT signed by nobody the API server trusts.
    const [header, payload] = tokens.viewer.split('.');
    const forged = await login(`${header ?? ''}.${payload ?? ''}.c2lnbmF0dXJl`).catch((e: unknown) => e);
    expect(isKubeUserError(forged) && forged.reason).toBe('invalid');
  });

  it(`the permissions the pages show are the user's RBAC on nodes/volumemanager of the node (${API})`, async () => {
    const { k8s, kubeConfig } = await processKubeConfig();
    expect(await nodePermissions(k8s, kubeConfig, tokens.viewer, NODE_NAME)).toEqual({ get: true, update: false });
    expect(await nodePermissions(k8s, kubeConfig, tokens.operator, NODE_NAME)).toEqual({ get: true, update: true });
  });

  it(`a viewer's session reads through the dashboard (200) and its forced resync gets the agent's 403 (${API})`, async () => {
    const deps = proxyDeps(await login(tokens.viewer));
    const snapshot = await proxyAgentSnapshot(new Request(`http://localhost/api/agents/${NODE_NAME}/snapshot`), NODE_NAME, deps);
    expect(snapshot.status).toBe(200);
    const refused = await proxyAgentAction(new Request(`http://localhost/api/agents/${NODE_NAME}/resync`, { method: 'POST' }), NODE_NAME, 'resync', deps);
    expect(refused.status).toBe(403);
    expect(await refused.text()).toContain(`user=system:serviceaccount:${NS}:viewer, verb=update, resource=nodes, subresource=volumemanager`);
  });

  it(`an operator's session acts through the dashboard, and the agent's audit log names the operator (${API})`, async () => {
    const deps = proxyDeps(await login(tokens.operator));
    const resync = await proxyAgentAction(new Request(`http://localhost/api/agents/${NODE_NAME}/resync`, { method: 'POST' }), NODE_NAME, 'resync', deps);
    expect(resync.status, await resync.clone().text()).toBe(200);
    const snapshot = (await (await proxyAgentSnapshot(new Request(`http://localhost/api/agents/${NODE_NAME}/snapshot`), NODE_NAME, deps)).json()) as { audit?: { caller: string; action: string }[] };
    expect(snapshot.audit).toContainEqual(expect.objectContaining({ caller: `system:serviceaccount:${NS}:operator`, action: 'resync' }));
  });

  it(`the dashboard's own ServiceAccount is refused by the agent: it keeps only discovery (${API})`, async () => {
    const dashboardToken = await createToken('volumescope-dashboard', 'volumescope');
    const deps = proxyDeps({ kind: 'token', username: 'dashboard', groups: [], token: dashboardToken, expiresAt: Math.floor(Date.now() / 1000) + 60 });
    expect((await proxyAgentSnapshot(new Request(`http://localhost/api/agents/${NODE_NAME}/snapshot`), NODE_NAME, deps)).status).toBe(403);
    expect((await proxyAgentAction(new Request(`http://localhost/api/agents/${NODE_NAME}/resync`, { method: 'POST' }), NODE_NAME, 'resync', deps)).status).toBe(403);
  });
});
