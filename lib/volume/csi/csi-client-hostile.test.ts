// The CSI client against drivers that misbehave on purpose (an in-process fake gRPC server on a
// unix socket): ListVolumes pagination that never ends or breaks the spec, and error details far
// larger than anything worth keeping.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { status } from '@grpc/grpc-js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { realClock } from '../../clock/clock.ts';
import { isTruncatedMessage, MESSAGE_LENGTH_LIMIT } from '../../truncate-message.ts';
import { CsiClient, isListVolumesPaginationError, MAX_LIST_VOLUMES_PAGES, MAX_LIST_VOLUMES_TOKEN_LENGTH } from './csi-client.ts';
import { isCsiRpcError } from './csi-errors.ts';
import type { VolumeCapability } from './csi-types.ts';
import { STRIPPED } from './redact.ts';
import { FakeCsiServer, FakeStatus, type FakeHandler } from './testing/fake-csi-server.ts';

const CAP: VolumeCapability = { mount: { fs_type: 'ext4', mount_flags: [] }, access_mode: { mode: 'SINGLE_NODE_WRITER' } };

let dir: string;
let server: FakeCsiServer | null = null;
let client: CsiClient | null = null;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'vs-csi-hostile-'));
});

afterEach(async () => {
  client?.close();
  client = null;
  await server?.stop();
  server = null;
  await rm(dir, { recursive: true, force: true });
});

async function serve(handlers: Partial<Record<'ListVolumes' | 'NodeStageVolume', FakeHandler>>): Promise<CsiClient> {
  server = await FakeCsiServer.start(join(dir, 'csi.sock'), handlers);
  client = new CsiClient(server.endpoint, { clock: realClock, timeoutMs: 10_000 });
  return client;
}

async function rejection(p: Promise<unknown>): Promise<Error> {
  return p.then(
    () => {
      throw new Error('expected the call to fail, but it succeeded');
    },
    (err: unknown) => err as Error,
  );
}

function entry(id: string): object {
  return { volume: { volume_id: id, capacity_bytes: 1 }, status: { published_node_ids: ['n'] } };
}

describe('CsiClient.listAllVolumes against a hostile driver', () => {
  it('follows next_token over every page of a well-behaved driver', async () => {
    const c = await serve({
      ListVolumes: (req) => {
        const start = req['starting_token'] === '' ? 0 : Number(req['starting_token']);
        return { entries: [entry(`v${start}`), entry(`v${start + 1}`)], next_token: start + 2 < 6 ? String(start + 2) : '' };
      },
    });

    const entries = await c.listAllVolumes(2);

    expect(entries.map((e) => e.volume?.volume_id)).toEqual(['v0', 'v1', 'v2', 'v3', 'v4', 'v5']);
    expect(server?.callsOf('ListVolumes').map((r) => [r['max_entries'], r['starting_token']])).toEqual([
      [2, ''],
      [2, '2'],
      [2, '4'],
    ]);
  });

  it(`gives up after ${MAX_LIST_VOLUMES_PAGES} pages when next_token never ends`, async () => {
    let n = 0;
    const c = await serve({ ListVolumes: () => ({ entries: [entry(`v${n}`)], next_token: `t${++n}` }) });

    const err = await rejection(c.listAllVolumes(100));

    expect(isListVolumesPaginationError(err)).toBe(true);
    expect(err.message).toBe(
      `ListVolumes of ${server?.endpoint ?? ''}: page ${MAX_LIST_VOLUMES_PAGES} still returned a next_token ("t${MAX_LIST_VOLUMES_PAGES}"); giving up after ${MAX_LIST_VOLUMES_PAGES} pages, ${MAX_LIST_VOLUMES_PAGES} entries; the volumes cannot be listed`,
    );
    expect(server?.callsOf('ListVolumes')).toHaveLength(MAX_LIST_VOLUMES_PAGES);
  });

  it('honours a smaller page bound', async () => {
    let n = 0;
    const c = await serve({ ListVolumes: () => ({ entries: [], next_token: `t${++n}` }) });

    const err = await rejection(c.listAllVolumes(100, { maxPages: 3 }));

    expect(err.message).toContain('page 3 still returned a next_token ("t3"); giving up after 3 pages, 0 entries');
    expect(server?.callsOf('ListVolumes')).toHaveLength(3);
  });

  it.each<{ name: string; page: (call: number) => object; want: string }>([
    { name: 'a next_token seen before', page: (call) => ({ entries: [], next_token: call % 2 === 0 ? 'a' : 'b' }), want: 'page 3 returned the next_token "a" a second time' },
    {
      name: 'a next_token too long to be real',
      page: () => ({ entries: [], next_token: 'x'.repeat(MAX_LIST_VOLUMES_TOKEN_LENGTH + 1) }),
      want: `page 1 returned a next_token of ${MAX_LIST_VOLUMES_TOKEN_LENGTH + 1} characters (at most ${MAX_LIST_VOLUMES_TOKEN_LENGTH} are accepted)`,
    },
    { name: 'more entries than max_entries', page: () => ({ entries: [entry('a'), entry('b'), entry('c')], next_token: '' }), want: 'page 1 has 3 entries, more than max_entries 2' },
  ])('refuses $name with a clear error', async ({ page, want }) => {
    let call = 0;
    const c = await serve({ ListVolumes: () => page(call++) });

    const err = await rejection(c.listAllVolumes(2));

    expect(isListVolumesPaginationError(err)).toBe(true);
    expect(err.message).toContain(want);
  });
});

describe('CsiClient error details from a hostile driver', () => {
  it('cuts huge details to the message limit after replacing the secrets in them', async () => {
    const secret = 's3cr3t-value-that-straddles-the-cut';
    // The secret sits across the point where the text is cut: replacing after cutting would leak half of it.
    const details = `${'a'.repeat(MESSAGE_LENGTH_LIMIT - 60)}${secret}${'z'.repeat(60_000)}`;
    const c = await serve({
      NodeStageVolume: () => {
        throw new FakeStatus(status.INTERNAL, details);
      },
    });

    const err = await rejection(c.nodeStageVolume({ volume_id: 'v', staging_target_path: join(dir, 'stage'), volume_capability: CAP, secrets: { password: secret } }));

    expect(isCsiRpcError(err)).toBe(true);
    if (!isCsiRpcError(err)) return;
    expect(err.code).toBe(status.INTERNAL);
    expect(err.details.length).toBeLessThanOrEqual(MESSAGE_LENGTH_LIMIT);
    expect(isTruncatedMessage(err.details)).toBe(true);
    expect(err.details).toContain(STRIPPED);
    expect(err.message).not.toContain('s3cr3t');
    expect(err.message.startsWith('rpc error: code = Internal desc = aaa')).toBe(true);
  });
});

describe('CsiClient against a driver whose answers are no protobuf', () => {
  /** A server answering NodeGetVolumeStats with the given raw bytes (undecodable ones, say). */
  async function rawStatsServer(body: Buffer): Promise<grpc.Server> {
    const raw = new grpc.Server();
    const definition: grpc.ServiceDefinition = {
      NodeGetVolumeStats: {
        path: '/csi.v1.Node/NodeGetVolumeStats',
        requestStream: false,
        responseStream: false,
        requestSerialize: (b: Buffer) => b,
        requestDeserialize: (b: Buffer) => b,
        responseSerialize: (b: Buffer) => b,
        responseDeserialize: (b: Buffer) => b,
      },
    };
    raw.addService(definition, {
      NodeGetVolumeStats: (_call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
        callback(null, body);
      },
    });
    await new Promise<void>((resolve, reject) => {
      raw.bindAsync(`unix://${join(dir, 'raw.sock')}`, grpc.ServerCredentials.createInsecure(), (err) => {
        if (err === null) resolve();
        else reject(err);
      });
    });
    return raw;
  }

  it('fails an undecodable response as Internal, as grpc-js does, and records the call', async () => {
    // Field 1 (usage) as a length-delimited record claiming 100 bytes with 1 present.
    const raw = await rawStatsServer(Buffer.from([0x0a, 0x64, 0x01]));
    const seen: string[] = [];
    const c = new CsiClient(`unix://${join(dir, 'raw.sock')}`, { clock: realClock, timeoutMs: 10_000, onCall: (call) => seen.push(`${call.fullMethod} ${call.grpcStatusCode}`) });
    try {
      const err = await rejection(c.nodeGetVolumeStats({ volume_id: 'v', volume_path: join(dir, 'mnt') }));

      expect(isCsiRpcError(err)).toBe(true);
      if (!isCsiRpcError(err)) return;
      expect(err.code).toBe(status.INTERNAL);
      expect(err.details).toContain('Response message parsing error');
      expect(seen).toEqual(['/csi.v1.Node/NodeGetVolumeStats Internal']);
    } finally {
      c.close();
      raw.forceShutdown();
    }
  });

  it('decodes an empty response to the defaults and succeeds', async () => {
    const raw = await rawStatsServer(Buffer.alloc(0));
    const c = new CsiClient(`unix://${join(dir, 'raw.sock')}`, { clock: realClock, timeoutMs: 10_000 });
    try {
      const res = await c.nodeGetVolumeStats({ volume_id: 'v', volume_path: join(dir, 'mnt') });

      expect(res.usage).toEqual([]);
      expect(res.volume_condition).toBeNull();
    } finally {
      c.close();
      raw.forceShutdown();
    }
  });
});
