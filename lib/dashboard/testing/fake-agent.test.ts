// The fake agent speaks the agent's snapshot encodings: compact by default, full on request, 400 otherwise.
import { afterEach, describe, expect, it } from 'vitest';
import { COMPACT_ENCODING, parseSnapshot } from '../../api/compact-snapshot.ts';
import { startFakeAgent, type FakeAgent } from './fake-agent.ts';

let agent: FakeAgent | null = null;

afterEach(async () => {
  await agent?.close();
  agent = null;
});

describe('fake agent snapshot encodings', () => {
  it('GET /api/v1/snapshot is compact unless ?encoding=full, both decode to the same snapshot; another encoding is a 400 naming it', async () => {
    // Arrange
    agent = await startFakeAgent({ token: 't', port: 0, nodeName: 'node-a', pods: 20, volumesPerPod: 3, tickMs: 0 });
    const get = (query: string) => fetch(`${agent?.url ?? ''}/api/v1/snapshot${query}`, { headers: { Authorization: 'Bearer t' } });

    // Act
    const compact = (await (await get('')).json()) as { encoding?: string };
    const full = (await (await get('?encoding=full')).json()) as { encoding?: string };
    const bad = await get('?encoding=gzip');

    // Assert
    expect(compact.encoding).toBe(COMPACT_ENCODING);
    expect(full.encoding).toBeUndefined();
    expect(parseSnapshot(compact)).toEqual(parseSnapshot(full));
    expect(parseSnapshot(full)).toEqual(agent.snapshot());
    expect(bad.status).toBe(400);
    expect(JSON.stringify(await bad.json())).toContain('encoding');
  });
});
