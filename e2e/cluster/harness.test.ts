/**
 * The cluster harness itself (scripts/cluster/cluster.ts, e2e/cluster/global-setup.ts): the
 * facts the tests get are right, a client identity issued for a test is who the API server says,
 * and agent-0 comes back after a SIGKILL with the same flags, port and token (what a kill -9
 * test needs). Does not need node agent-0 Ready.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { NODE } from '../../scripts/cluster/cluster.ts';
import { cluster, facts, versionTag } from './cluster-context.ts';

const API = versionTag('kube-apiserver');

async function snapshotStatus(): Promise<number> {
  const token = readFileSync(facts.agent.tokenFile, 'utf8').trim();
  const res = await fetch(`${facts.agent.url}/api/v1/snapshot`, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(10_000) });
  await res.body?.cancel();
  return res.status;
}

describe(`cluster harness (${API}, ${versionTag('kubectl')})`, () => {
  it(`the API server and kubectl are the pinned build (${API})`, async () => {
    const version = JSON.parse(await cluster.kubectl(['version', '-o', 'json'])) as { clientVersion: { gitVersion: string }; serverVersion: { gitVersion: string } };
    expect(version.serverVersion.gitVersion).toBe(API.split(' ')[1]);
    expect(version.clientVersion.gitVersion).toBe(versionTag('kubectl').split(' ')[1]);
    expect(new URL(facts.apiServerUrl).hostname).toBe('127.0.0.1');
  });

  it(`a client identity issued for a test authenticates as its user and groups (${API})`, async () => {
    const { kubeconfig } = cluster.issueClientIdentity({ file: 'test-erin', user: 'erin', groups: ['volumescope:testers', 'team-a'] });
    const review = JSON.parse(await cluster.kubectl(['auth', 'whoami', '-o', 'json'], { kubeconfig })) as { status: { userInfo: { username: string; groups: string[] } } };
    expect(review.status.userInfo).toMatchObject({ username: 'erin', groups: ['volumescope:testers', 'team-a', 'system:authenticated'] });
  });

  it(`restartAgent({ kill9: true }) kills agent ${NODE} with SIGKILL and starts it again on the same URL and token (${API})`, async () => {
    expect(await snapshotStatus()).toBe(200);
    const exit = await cluster.restartAgent({ kill9: true });
    expect(exit).toEqual({ code: null, signal: 'SIGKILL' });
    expect(await snapshotStatus()).toBe(200);
    expect(await cluster.agentLog()).toContain(`--- cluster: agent ${NODE} killed (SIGKILL), starting again ---`);
  });

  it(`restartAgent() stops agent ${NODE} with SIGTERM (a clean exit) and starts it again (${API})`, async () => {
    const exit = await cluster.restartAgent();
    expect(exit).toEqual({ code: 0, signal: null });
    expect(await snapshotStatus()).toBe(200);
  });
});
