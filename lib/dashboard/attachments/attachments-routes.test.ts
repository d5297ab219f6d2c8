import * as clientNode from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { realClock } from '../../clock/clock.ts';
import { FakeApiServer } from '../../sources/kube/testing/fake-apiserver.ts';
import { fakeKubeConfig } from '../../sources/kube/testing/kubeconfig-file.ts';
import { AttachmentInformers } from './attachment-informers.ts';
import type { AttachmentDetailResponse, AttachmentsErrorResponse, AttachmentsListResponse } from './attachments-api.ts';
import { getAttachment, getAttachments, type AttachmentsRouteDeps } from './attachments-routes.ts';
import { AttachmentsConfigError } from './server-attachments.ts';
import { pod } from './testing/fixtures.ts';
import { seedAttachedVolume } from './testing/seed.ts';

// The handlers over a real informer set (real client-node, FakeApiServer on 127.0.0.1).

let api: FakeApiServer | undefined;
let informers: AttachmentInformers | undefined;
afterEach(async () => {
  await informers?.stop();
  await api?.close();
});

async function deps(): Promise<AttachmentsRouteDeps> {
  api = await FakeApiServer.start();
  seedAttachedVolume(api, [pod('app-old', 'node-a', 'claim-pv-1'), pod('app-new', 'node-b', 'claim-pv-1')], realClock.now());
  const set = new AttachmentInformers({ clientNode, kubeConfig: fakeKubeConfig({ server: api.url }), clock: realClock });
  informers = set;
  return { informers: () => Promise.resolve(set), now: () => Date.now(), firstListWaitMs: 10_000 };
}

describe('attachment routes', () => {
  it('GET /api/attachments waits for the first lists and answers the Multi-Attach', async () => {
    const res = await getAttachments(await deps());
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const body = (await res.json()) as AttachmentsListResponse;
    expect(body).toMatchObject({ listed: true, problems: [], counts: { volumes: 1, blocked: 1, suspect: 0 }, outOfServiceNodes: [] });
    expect(body.volumes[0]?.verdicts[0]).toMatchObject({ kind: 'multi-attach', node: 'node-b', expectedEvent: 'Multi-Attach error for volume "pv-1" Volume is already used by pod(s) app-old' });
  });

  it('GET /api/attachments/<pv> answers the volume, its nodes and verdicts; an unknown PV is null', async () => {
    const d = await deps();
    const body = (await (await getAttachment('pv-1', d)).json()) as AttachmentDetailResponse;
    expect(body.volume?.nodes.map((n) => n.node)).toEqual(['node-a', 'node-b']);
    expect(body.nodes.map((n) => n.name)).toEqual(['node-a', 'node-b']);
    expect(body.explanation?.severity).toBe('blocked');
    const unknown = (await (await getAttachment('pv-nope', d)).json()) as AttachmentDetailResponse;
    expect(unknown).toMatchObject({ listed: true, volume: null, explanation: null, nodes: [] });
  });

  it('without a Kubernetes API configuration: 503 naming the variable', async () => {
    const res = await getAttachments({ informers: () => Promise.reject(new AttachmentsConfigError('KUBECONFIG', 'no API')), now: () => 0, firstListWaitMs: 0 });
    expect(res.status).toBe(503);
    expect((await res.json()) as AttachmentsErrorResponse).toEqual({ error: 'no API', variable: 'KUBECONFIG' });
  });
});
