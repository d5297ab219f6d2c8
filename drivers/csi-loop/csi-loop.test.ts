// End-to-end tests of the csi-loop driver through a real grpc-js client on its unix socket.
// With VOLUMESCOPE_MOUNT_NS=1 (root in a private mount namespace) the privileged backend runs for
// real: loop devices, ext4, bind mounts. Otherwise the same tests run the unprivileged backend.
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { codeOf, control, CsiTestClient } from './csi-test-client.ts';
import { harnessPerTest, MiB, MODE, MOUNT_CAP, NODE, PRIVILEGED, waitFor, type Harness, type VolumeEntry } from './csi-test-harness.ts';
import { loopDevicesOf, run } from './host-tools.ts';

const { DEADLINE_EXCEEDED, NOT_FOUND, ALREADY_EXISTS, FAILED_PRECONDITION, ABORTED, OUT_OF_RANGE, INTERNAL, UNAVAILABLE, INVALID_ARGUMENT } =
  status;

const start = harnessPerTest();

describe(`csi-loop driver (${MODE} mode)`, () => {
  it('answers the identity, capability and node-info calls', async () => {
    const h = await start();
    const info = await h.client.identity('GetPluginInfo');
    expect(info).toMatchObject({ name: 'csi-loop.volumescope.dev', vendor_version: '0.1.0' });
    expect(await h.client.identity('Probe')).toEqual({ ready: { value: true } });
    const pluginCaps = await h.client.identity<{ capabilities: { service?: { type: string } | null }[] }>('GetPluginCapabilities');
    expect(pluginCaps.capabilities.map((c) => c.service?.type)).toContain('CONTROLLER_SERVICE');

    const controllerCaps = await h.client.controller<{ capabilities: { rpc: { type: string } }[] }>('ControllerGetCapabilities');
    expect(controllerCaps.capabilities.map((c) => c.rpc.type)).toEqual([
      'CREATE_DELETE_VOLUME',
      'PUBLISH_UNPUBLISH_VOLUME',
      'LIST_VOLUMES',
      'GET_CAPACITY',
      'EXPAND_VOLUME',
      'LIST_VOLUMES_PUBLISHED_NODES',
      'GET_VOLUME',
    ]);
    const nodeCaps = await h.client.node<{ capabilities: { rpc: { type: string } }[] }>('NodeGetCapabilities');
    expect(nodeCaps.capabilities.map((c) => c.rpc.type)).toEqual(['STAGE_UNSTAGE_VOLUME', 'EXPAND_VOLUME', 'GET_VOLUME_STATS', 'VOLUME_CONDITION']);
    expect(await h.client.node('NodeGetInfo')).toMatchObject({ node_id: NODE });
  });

  it('runs the full lifecycle, shares data between target and staging, and leaves nothing behind', async () => {
    const h = await start();
    const vol = 'pvc-lifecycle';
    await fs.mkdir(h.staging(vol), { recursive: true });

    // Arrange + act: attach, stage, publish.
    const published = await h.publishController(vol, { volume_context: { capacity: '32Mi' } });
    const devicePath = published.publish_context.devicePath ?? '';
    await h.stage(vol, { publish_context: published.publish_context });
    await h.publish(vol);

    // Assert: a file written in the target is visible in the staging path.
    await fs.writeFile(path.join(h.target(vol), 'hello.txt'), 'written through the target');
    expect(await fs.readFile(path.join(h.staging(vol), 'hello.txt'), 'utf8')).toBe('written through the target');
    const image = await h.image(vol);
    if (PRIVILEGED) {
      expect(devicePath).toMatch(/^\/dev\/loop[0-9]+$/);
      expect(await loopDevicesOf(image)).toEqual([devicePath]);
      expect((await fs.stat(image)).size).toBe(32 * MiB);
      expect(await h.mountsUnderDir()).toEqual(expect.arrayContaining([h.staging(vol), h.target(vol)]));
    } else {
      expect(devicePath).toBe(image);
      expect(await fs.realpath(h.target(vol))).toBe(image);
    }

    // Act: tear down in reverse order.
    await h.tearDown(vol);

    // Assert: call order, and no loop device or mount of this driver remains.
    const calls = await h.calls();
    expect(calls.map((c) => [c.method, c.code])).toEqual([
      ['ControllerPublishVolume', 'OK'],
      ['NodeStageVolume', 'OK'],
      ['NodePublishVolume', 'OK'],
      ['NodeUnpublishVolume', 'OK'],
      ['NodeUnstageVolume', 'OK'],
      ['ControllerUnpublishVolume', 'OK'],
    ]);
    expect(calls.map((c) => c.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(calls[2]).toMatchObject({ volumeId: vol, targetPath: h.target(vol), stagingPath: h.staging(vol) });
    expect(await h.mountsUnderDir()).toEqual([]);
    if (PRIVILEGED) {
      expect((await run('losetup', ['-j', image])).stdout.trim()).toBe('');
    }
    await expect(fs.lstat(h.target(vol))).rejects.toMatchObject({ code: 'ENOENT' });
    expect((await fs.lstat(h.staging(vol))).isDirectory()).toBe(true);
    expect(await fs.readdir(h.staging(vol))).toEqual([]);
    const listed = await h.client.controller<{ entries: VolumeEntry[] }>('ListVolumes');
    expect(listed.entries.map((e) => e.status.published_node_ids)).toEqual([[]]);
  });

  it('treats every repeated call as a success without side effects', async () => {
    const h = await start();
    const vol = 'pvc-idem';
    await fs.mkdir(h.staging(vol), { recursive: true });
    const first = await h.publishController(vol);
    const second = await h.publishController(vol);
    expect(second).toEqual(first);
    await h.stage(vol);
    await h.stage(vol);
    await h.publish(vol);
    await h.publish(vol);
    if (PRIVILEGED) {
      const image = await h.image(vol);
      expect(await loopDevicesOf(image)).toHaveLength(1);
      expect((await h.mountsUnderDir()).filter((m) => m === h.target(vol))).toHaveLength(1);
    }
    await h.unpublish(vol);
    await h.unpublish(vol);
    await h.unpublish(vol, h.target(vol, 'pod-never-published'));
    await h.unstage(vol);
    await h.unstage(vol);
    await h.unpublishController(vol);
    await h.unpublishController(vol);
    await h.unpublishController('pvc-never-seen');

    const calls = await h.calls();
    expect(calls).toHaveLength(14);
    expect(calls.every((c) => c.code === 'OK')).toBe(true);
    expect(await h.mountsUnderDir()).toEqual([]);
  });

  it.each([
    {
      name: 'publish before stage',
      arrange: (h: Harness) => h.publishController('v'),
      act: (h: Harness) => h.publish('v'),
      code: FAILED_PRECONDITION,
    },
    {
      name: 'publish with a staging path that was not staged',
      arrange: async (h: Harness) => {
        await h.publishController('v');
        await h.stage('v');
      },
      act: (h: Harness) => h.publish('v', { staging_target_path: path.join(h.dir, 'elsewhere') }),
      code: FAILED_PRECONDITION,
    },
    {
      name: 'unstage while a publish remains',
      arrange: (h: Harness) => h.setUp('v'),
      act: (h: Harness) => h.unstage('v'),
      code: FAILED_PRECONDITION,
    },
    {
      name: 'controller unpublish while still staged on this node',
      arrange: async (h: Harness) => {
        await h.publishController('v');
        await h.stage('v');
      },
      act: (h: Harness) => h.unpublishController('v'),
      code: FAILED_PRECONDITION,
    },
    {
      name: 'stage before the volume is attached to this node',
      arrange: async (h: Harness) => {
        expect((await control(h.port, 'POST', '/volumes', { volumeId: 'v' })).status).toBe(200);
      },
      act: (h: Harness) => h.stage('v'),
      code: FAILED_PRECONDITION,
    },
    {
      name: 'a single-node volume published to a second node',
      arrange: (h: Harness) => h.publishController('v'),
      act: (h: Harness) => h.client.controller('ControllerPublishVolume', { volume_id: 'v', node_id: 'node-b', volume_capability: MOUNT_CAP }),
      code: FAILED_PRECONDITION,
    },
    {
      name: 'the same target published again read-only',
      arrange: (h: Harness) => h.setUp('v'),
      act: (h: Harness) => h.publish('v', { readonly: true }),
      code: ALREADY_EXISTS,
    },
    {
      name: 'a request without a volume capability',
      arrange: (h: Harness) => h.publishController('v'),
      act: (h: Harness) => h.stage('v', { volume_capability: null }),
      code: INVALID_ARGUMENT,
    },
  ])('rejects $name', async ({ arrange, act, code }) => {
    const h = await start();
    await arrange(h);
    const result = await codeOf(act(h));
    expect(result.code).toBe(code);
    expect(result.details).not.toBe('');
  });

  it.each([
    ['NodeStageVolume', (h: Harness) => h.stage('ghost')],
    ['NodeUnstageVolume', (h: Harness) => h.unstage('ghost')],
    ['NodePublishVolume', (h: Harness) => h.publish('ghost')],
    ['NodeUnpublishVolume', (h: Harness) => h.unpublish('ghost')],
    ['NodeGetVolumeStats', (h: Harness) => h.client.node('NodeGetVolumeStats', { volume_id: 'ghost', volume_path: h.target('ghost') })],
    ['NodeExpandVolume', (h: Harness) => h.client.node('NodeExpandVolume', { volume_id: 'ghost', volume_path: h.staging('ghost') })],
    ['ControllerGetVolume', (h: Harness) => h.client.controller('ControllerGetVolume', { volume_id: 'ghost' })],
  ])('answers NOT_FOUND for %s on an unknown volume', async (_method, act) => {
    const h = await start();
    expect((await codeOf(act(h))).code).toBe(NOT_FOUND);
  });

  it('answers the capability and node-info calls while the state lock is held, and the state calls after it', async () => {
    // Arrange: a live process (this one) holds the state dir's lock, as another csi-loop process would.
    const h = await start();
    const lock = path.join(h.dir, 'state', 'state.lock');
    await fs.writeFile(lock, `${process.pid}\n`, { flag: 'wx' });
    let listed = false;
    const list = h.client.controller('ListVolumes', {}).then(() => {
      listed = true;
    });

    // Act
    const answers = await Promise.all([
      h.client.node('NodeGetCapabilities'),
      h.client.node('NodeGetInfo'),
      h.client.controller('ControllerGetCapabilities'),
    ]);

    // Assert
    expect(answers).toHaveLength(3);
    expect(listed).toBe(false);
    await fs.rm(lock);
    await list;
    expect(listed).toBe(true);
  });

  it('serialises calls per volume: a concurrent call gets ABORTED', async () => {
    const h = await start();
    await h.publishController('v');
    await h.fault('NodeStageVolume', { delayMs: 400, failNext: 1 });
    const slow = h.stage('v');
    await waitFor(async () => ((await control(h.port, 'GET', '/state')).body as { inFlight: string[] }).inFlight.includes('v'));

    const concurrent = await codeOf(h.stage('v'));
    expect(concurrent).toEqual({ code: ABORTED, details: 'an operation with the given Volume ID v already exists' });
    await slow;
    // The lock is released once the slow call is done.
    await h.stage('v');
    expect((await h.calls()).map((c) => `${c.method}:${c.code}`)).toEqual([
      'ControllerPublishVolume:OK',
      'NodeStageVolume:OK',
      'NodeStageVolume:ABORTED',
      'NodeStageVolume:OK',
    ]);
  });

  it('injects faults by status name and number, for the next N calls only', async () => {
    const h = await start();
    await h.fault('NodeGetInfo', { code: 'UNAVAILABLE', message: 'node plugin is restarting' });
    expect(await codeOf(h.client.node('NodeGetInfo'))).toEqual({ code: UNAVAILABLE, details: 'node plugin is restarting' });
    expect(await codeOf(h.client.node('NodeGetInfo'))).toMatchObject({ code: UNAVAILABLE });
    expect((await control(h.port, 'DELETE', '/faults/NodeGetInfo')).status).toBe(200);
    expect(await h.client.node('NodeGetInfo')).toMatchObject({ node_id: NODE });

    expect((await control(h.port, 'POST', '/faults', { method: '/csi.v1.Identity/Probe', code: 13, failNext: 2 })).status).toBe(200);
    expect((await codeOf(h.client.identity('Probe'))).code).toBe(INTERNAL);
    expect((await codeOf(h.client.identity('Probe'))).code).toBe(INTERNAL);
    expect(await h.client.identity('Probe')).toEqual({ ready: { value: true } });
    expect((await control(h.port, 'GET', '/faults')).body).toEqual({});
    expect((await h.calls()).map((c) => `${c.method}:${c.code}`)).toEqual([
      'NodeGetInfo:UNAVAILABLE',
      'NodeGetInfo:UNAVAILABLE',
      'NodeGetInfo:OK',
      'Probe:INTERNAL',
      'Probe:INTERNAL',
      'Probe:OK',
    ]);
  });

  it('delays a call and then answers normally', async () => {
    const h = await start();
    await h.fault('NodeGetCapabilities', { delayMs: 300 });
    const started = performance.now();
    await h.client.node('NodeGetCapabilities');
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
    const [entry] = (await control(h.port, 'GET', '/calls')).body as { durationMs: number; code: string }[];
    expect(entry?.code).toBe('OK');
    expect(entry?.durationMs).toBeGreaterThanOrEqual(290);
  });

  it('hangs a call until the caller deadline gives DEADLINE_EXCEEDED, then releases the volume', async () => {
    const h = await start();
    await h.publishController('v');
    await h.fault('NodeStageVolume', { hang: true });
    const hung = await codeOf(
      h.client.node('NodeStageVolume', { volume_id: 'v', staging_target_path: h.staging('v'), volume_capability: MOUNT_CAP }, 300),
    );
    expect(hung.code).toBe(DEADLINE_EXCEEDED);
    await waitFor(async () => (await h.calls()).some((c) => c.method === 'NodeStageVolume'));
    expect((await h.calls()).at(-1)).toMatchObject({ method: 'NodeStageVolume', code: 'DEADLINE_EXCEEDED' });

    await control(h.port, 'DELETE', '/faults');
    await h.stage('v');
    expect((await h.calls()).at(-1)).toMatchObject({ method: 'NodeStageVolume', code: 'OK' });
  });

  it('refuses invalid faults on the control endpoint', async () => {
    const h = await start();
    expect((await control(h.port, 'PUT', '/faults/NoSuchMethod', { code: 'INTERNAL' })).status).toBe(400);
    expect((await control(h.port, 'PUT', '/faults/Probe', { code: 'NOT_A_CODE' })).status).toBe(400);
    expect((await control(h.port, 'PUT', '/faults/Probe', {})).status).toBe(400);
    expect((await control(h.port, 'GET', '/nope')).status).toBe(404);
  });

  it('pages ListVolumes and reports the nodes each volume is published to', async () => {
    const h = await start();
    for (const id of ['vol-c', 'vol-a', 'vol-e', 'vol-b']) {
      expect((await control(h.port, 'POST', '/volumes', { volumeId: id, capacity: '16Mi' })).status).toBe(200);
    }
    await h.publishController('vol-d');
    const multi = { mount: { fs_type: '', mount_flags: [] }, access_mode: { mode: 'MULTI_NODE_MULTI_WRITER' } };
    await h.client.controller('ControllerPublishVolume', { volume_id: 'vol-b', node_id: 'node-b', volume_capability: multi });
    await h.client.controller('ControllerPublishVolume', { volume_id: 'vol-b', node_id: 'node-c', volume_capability: multi });

    const pages: VolumeEntry[][] = [];
    let token = '';
    do {
      const page = await h.client.controller<{ entries: VolumeEntry[]; next_token: string }>('ListVolumes', {
        max_entries: 2,
        starting_token: token,
      });
      pages.push(page.entries);
      token = page.next_token;
    } while (token !== '' && pages.length < 10);

    expect(pages.map((p) => p.length)).toEqual([2, 2, 1]);
    const entries = pages.flat();
    expect(entries.map((e) => e.volume.volume_id)).toEqual(['vol-a', 'vol-b', 'vol-c', 'vol-d', 'vol-e']);
    expect(Object.fromEntries(entries.map((e) => [e.volume.volume_id, e.status.published_node_ids]))).toEqual({
      'vol-a': [],
      'vol-b': ['node-b', 'node-c'],
      'vol-c': [],
      'vol-d': [NODE],
      'vol-e': [],
    });
    expect(entries[0]?.volume.capacity_bytes).toBe(16 * MiB);
    expect((await codeOf(h.client.controller('ListVolumes', { starting_token: 'bogus' }))).code).toBe(ABORTED);
    const one = await h.client.controller<VolumeEntry>('ControllerGetVolume', { volume_id: 'vol-d' });
    expect(one.status.published_node_ids).toEqual([NODE]);
    expect(one.volume.capacity_bytes).toBe(64 * MiB);
  });

  it('keeps its state across a restart', async () => {
    const h = await start();
    const vol = 'pvc-restart';
    await h.setUp(vol);
    await fs.writeFile(path.join(h.target(vol), 'before-restart'), 'kept');

    await h.restart();

    const listed = await h.client.controller<{ entries: VolumeEntry[] }>('ListVolumes');
    expect(listed.entries.map((e) => [e.volume.volume_id, e.status.published_node_ids])).toEqual([[vol, [NODE]]]);
    await h.publish(vol);
    expect(await fs.readFile(path.join(h.staging(vol), 'before-restart'), 'utf8')).toBe('kept');
    expect((await h.calls()).map((c) => `${c.seq}:${c.method}:${c.code}`)).toEqual(['1:ListVolumes:OK', '2:NodePublishVolume:OK']);
    await h.tearDown(vol);

    // The disk outlives the attachment: a new lifecycle sees the old data.
    await h.setUp(vol);
    expect(await fs.readFile(path.join(h.target(vol), 'before-restart'), 'utf8')).toBe('kept');
    await h.tearDown(vol);
    expect(await h.mountsUnderDir()).toEqual([]);
    if (PRIVILEGED) {
      expect(await loopDevicesOf(await h.image(vol))).toEqual([]);
    }
  });

  it('reports the volume condition set through the control API in NodeGetVolumeStats', async () => {
    const h = await start();
    const vol = 'pvc-condition';
    await fs.mkdir(h.staging(vol), { recursive: true });
    await h.publishController(vol);
    await h.stage(vol);
    await h.publish(vol);
    type Stats = { volume_condition: { abnormal: boolean; message: string } | null };
    const stats = (): Promise<Stats> => h.client.node<Stats>('NodeGetVolumeStats', { volume_id: vol, volume_path: h.target(vol) });
    expect((await stats()).volume_condition).toEqual({ abnormal: false, message: 'volume is healthy' });

    const set = await control(h.port, 'POST', '/volume-condition', { volumeId: vol, abnormal: true, message: 'disk /dev/loop9: I/O error' });
    expect(set.status).toBe(200);
    expect((await stats()).volume_condition).toEqual({ abnormal: true, message: 'disk /dev/loop9: I/O error' });

    await control(h.port, 'POST', '/volume-condition', { volumeId: vol, abnormal: false });
    expect((await stats()).volume_condition).toEqual({ abnormal: false, message: 'volume is healthy' });
    expect((await control(h.port, 'POST', '/volume-condition', { volumeId: vol })).status).toBe(400);
    await h.tearDown(vol);
  });

  it('expands a staged volume to the requested capacity', async () => {
    const h = await start();
    const vol = 'pvc-grow';
    await fs.mkdir(h.staging(vol), { recursive: true });
    await h.publishController(vol);
    expect((await codeOf(h.client.node('NodeExpandVolume', { volume_id: vol, volume_path: h.staging(vol) }))).code).toBe(
      FAILED_PRECONDITION,
    );
    await h.stage(vol);
    await h.publish(vol);
    await fs.writeFile(path.join(h.target(vol), 'data'), 'survives the resize');
    type Stats = { usage: { unit: string; total: number }[] };
    const before = await h.client.node<Stats>('NodeGetVolumeStats', { volume_id: vol, volume_path: h.target(vol) });

    const expand = (required: number, limit = 0): Promise<{ capacity_bytes: number }> =>
      h.client.node('NodeExpandVolume', {
        volume_id: vol,
        volume_path: h.staging(vol),
        staging_target_path: h.staging(vol),
        capacity_range: { required_bytes: required, limit_bytes: limit },
      });
    expect(await expand(128 * MiB)).toEqual({ capacity_bytes: 128 * MiB });
    expect(await expand(128 * MiB)).toEqual({ capacity_bytes: 128 * MiB });
    expect(await expand(32 * MiB)).toEqual({ capacity_bytes: 128 * MiB });
    expect((await codeOf(expand(256 * MiB, 200 * MiB))).code).toBe(OUT_OF_RANGE);

    const after = await h.client.node<Stats>('NodeGetVolumeStats', { volume_id: vol, volume_path: h.target(vol) });
    const bytesTotal = (s: Stats): number => s.usage.find((u) => u.unit === 'BYTES')?.total ?? 0;
    expect(bytesTotal(before)).toBeGreaterThan(0);
    if (PRIVILEGED) {
      expect(bytesTotal(after)).toBeGreaterThan(bytesTotal(before) + 48 * MiB);
      expect((await fs.stat(await h.image(vol))).size).toBe(128 * MiB);
    }
    expect(after.usage.map((u) => u.unit)).toEqual(['BYTES', 'INODES']);
    expect(await fs.readFile(path.join(h.target(vol), 'data'), 'utf8')).toBe('survives the resize');
    const got = await h.client.controller<VolumeEntry>('ControllerGetVolume', { volume_id: vol });
    expect(got.volume.capacity_bytes).toBe(128 * MiB);
    await h.tearDown(vol);
  });

  it('detaches a volume behind the caller\'s back through the control endpoint', async () => {
    const h = await start();
    const vol = 'pvc-yanked';
    await h.setUp(vol);
    const image = await h.image(vol);

    const res = await control(h.port, 'POST', '/detach', { volumeId: vol });
    expect(res.status).toBe(200);

    const listed = await h.client.controller<{ entries: VolumeEntry[] }>('ListVolumes');
    expect(listed.entries[0]?.status.published_node_ids).toEqual([]);
    expect(await h.mountsUnderDir()).toEqual([]);
    if (PRIVILEGED) {
      expect(await loopDevicesOf(image)).toEqual([]);
    }
    // The usual teardown calls are now no-ops, and the volume can be attached again.
    await h.unpublish(vol);
    await h.unstage(vol);
    await h.unpublishController(vol);
    await h.setUp(vol);
    await h.tearDown(vol);
    expect((await control(h.port, 'POST', '/detach', { volumeId: 'ghost' })).status).toBe(404);
  });

  it('never logs or reports secret values', async () => {
    const h = await start();
    const secret = 'hunter2-do-not-log';
    const vol = 'pvc-secret';
    await fs.mkdir(h.staging(vol), { recursive: true });
    await h.publishController(vol, { secrets: { password: secret } });
    await h.stage(vol, { secrets: { token: secret } });
    await h.publish(vol, { secrets: { token: secret } });
    await h.fault('NodeUnpublishVolume', { code: 'INTERNAL', failNext: 1 });
    await codeOf(h.unpublish(vol));
    await h.tearDown(vol);

    const logged = h.logLines.join('\n');
    expect(h.logLines.filter((l) => l.includes('"method":"ControllerPublishVolume"'))).toHaveLength(1);
    expect(logged).toContain('***stripped***');
    expect(logged).not.toContain(secret);
    for (const route of ['/calls', '/state', '/faults']) {
      expect(JSON.stringify((await control(h.port, 'GET', route)).body)).not.toContain(secret);
    }
    const state = await fs.readFile(path.join(h.dir, 'state', 'state.json'), 'utf8');
    expect(state).not.toContain(secret);
  });

  it('logs only failed calls with --log-calls failed, and keeps every call in the call log', async () => {
    const h = await start({ logCalls: 'failed' });
    const vol = 'pvc-quiet';
    await fs.mkdir(h.staging(vol), { recursive: true });
    await h.publishController(vol);
    await h.fault('NodeStageVolume', { code: 'INTERNAL', failNext: 1 });
    expect((await codeOf(h.stage(vol))).code).toBe(INTERNAL);
    await h.stage(vol);
    const calls = h.logLines.filter((l) => l.includes('"msg":"csi call'));
    expect(calls).toHaveLength(1);
    expect(calls[0]).toContain('"msg":"csi call failed"');
    expect(calls[0]).toContain('"method":"NodeStageVolume"');
    const logged = (await control(h.port, 'GET', '/calls')).body as { method: string; code: string }[];
    expect(logged.map((c) => `${c.method} ${c.code}`)).toEqual(expect.arrayContaining(['ControllerPublishVolume OK', 'NodeStageVolume INTERNAL', 'NodeStageVolume OK']));
    await h.unstage(vol);
    await h.unpublishController(vol);
  });

  it('serves plugin registration next to the CSI socket and removes both sockets on close', async () => {
    const h = await start({ registration: true });
    const regSocket = h.driver.registrationSocketPath ?? '';
    expect(regSocket).toBe(path.join(h.dir, 'plugins_registry', 'csi-loop.volumescope.dev-reg.sock'));
    const reg = new CsiTestClient(`unix://${regSocket}`);
    try {
      expect(await reg.call('pluginregistration.Registration', 'GetInfo')).toEqual({
        type: 'CSIPlugin',
        name: 'csi-loop.volumescope.dev',
        endpoint: h.driver.socketPath,
        supported_versions: ['1.0.0'],
      });
      await reg.call('pluginregistration.Registration', 'NotifyRegistrationStatus', { plugin_registered: true });
    } finally {
      reg.close();
    }
    const state = (await control(h.port, 'GET', '/state')).body as { registration: { pluginRegistered: boolean } };
    expect(state.registration.pluginRegistered).toBe(true);

    await h.driver.close();
    await expect(fs.lstat(regSocket)).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(fs.lstat(h.driver.socketPath)).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

// ---- CSI ephemeral (inline) volumes ---------------------------------------------------------

/** What kubelet sends for an inline ephemeral volume of a CSIDriver with podInfoOnMount. */
function ephemeralContext(extra: Record<string, string> = {}): Record<string, string> {
  return {
    'csi.storage.k8s.io/ephemeral': 'true',
    'csi.storage.k8s.io/pod.name': 'pod-1',
    'csi.storage.k8s.io/pod.namespace': 'default',
    'csi.storage.k8s.io/pod.uid': 'pod-1-uid',
    'csi.storage.k8s.io/serviceAccount.name': '',
    ...extra,
  };
}

/** NodePublishVolume of an ephemeral volume: no staging path, no publish context. */
function publishEphemeral(h: Harness, volumeId: string, extra: object = {}): Promise<unknown> {
  return h.client.node('NodePublishVolume', {
    volume_id: volumeId,
    target_path: h.target(volumeId),
    volume_capability: MOUNT_CAP,
    volume_context: ephemeralContext(),
    ...extra,
  });
}

interface StateVolumes {
  volumes: Record<string, { ephemeral: boolean; staged: unknown; publishedNodes: object; publishedTargets: object; devicePath: string | null; capacityBytes: number }>;
}

async function stateVolumes(h: Harness): Promise<StateVolumes['volumes']> {
  return ((await control(h.port, 'GET', '/state')).body as StateVolumes).volumes;
}

/** Loop devices whose backing file is `image` (`losetup -a`, which works after the image is deleted). */
async function loopDevicesBackedBy(image: string): Promise<string[]> {
  const { stdout } = await run('losetup', ['-a']);
  return stdout.split('\n').filter((line) => line.includes(`(${image}`));
}

describe(`csi-loop driver, ephemeral volumes (${MODE} mode)`, () => {
  it('creates an ephemeral volume on NodePublishVolume, publishes it without stage, and deletes it on NodeUnpublishVolume leaving nothing behind', async () => {
    // Arrange
    const h = await start();
    const vol = 'csi-ephemeral-life';

    // Act
    await publishEphemeral(h, vol, { volume_context: ephemeralContext({ capacity: '32Mi' }) });

    // Assert: usable at the target, created with the requested capacity, never attached or staged.
    await fs.writeFile(path.join(h.target(vol), 'scratch.txt'), 'ephemeral data');
    expect(await fs.readFile(path.join(h.target(vol), 'scratch.txt'), 'utf8')).toBe('ephemeral data');
    const image = await h.image(vol);
    expect((await stateVolumes(h))[vol]).toMatchObject({ ephemeral: true, staged: null, publishedNodes: {}, capacityBytes: 32 * MiB });
    if (PRIVILEGED) {
      expect((await fs.stat(image)).size).toBe(32 * MiB);
      expect(await loopDevicesOf(image)).toHaveLength(1);
      expect(await h.mountsUnderDir()).toEqual([h.target(vol)]);
    } else {
      expect(await fs.readlink(h.target(vol))).toBe(image);
      expect(await h.mountsUnderDir()).toEqual([]);
    }

    // Act
    await h.unpublish(vol);

    // Assert: the volume, its disk, its target, its mount and its loop device are gone.
    expect((await h.calls()).map((c) => `${c.method} ${c.code}`)).toEqual(['NodePublishVolume OK', 'NodeUnpublishVolume OK']);
    expect(Object.keys(await stateVolumes(h))).toEqual([]);
    await expect(fs.lstat(image)).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(fs.lstat(h.target(vol))).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await h.mountsUnderDir()).toEqual([]);
    if (PRIVILEGED) {
      expect(await loopDevicesBackedBy(image)).toEqual([]);
    }
  });

  it('treats a repeated ephemeral publish and unpublish as a success, with the default capacity and one attachment', async () => {
    // Arrange
    const h = await start();
    const vol = 'csi-ephemeral-idem';

    // Act
    await publishEphemeral(h, vol);
    await publishEphemeral(h, vol);
    const image = await h.image(vol);
    const published = (await stateVolumes(h))[vol];
    const loops = PRIVILEGED ? await loopDevicesOf(image) : [];
    const mounts = await h.mountsUnderDir();
    await h.unpublish(vol);
    await h.unpublish(vol);

    // Assert
    expect(published?.capacityBytes).toBe(64 * MiB);
    expect(Object.keys(published?.publishedTargets ?? {})).toEqual([h.target(vol)]);
    expect(loops).toHaveLength(PRIVILEGED ? 1 : 0);
    expect(mounts).toEqual(PRIVILEGED ? [h.target(vol)] : []);
    const calls = await h.calls();
    expect(calls.map((c) => `${c.method} ${c.code}`)).toEqual(['NodePublishVolume OK', 'NodePublishVolume OK', 'NodeUnpublishVolume OK', 'NodeUnpublishVolume OK']);
    expect(Object.keys(await stateVolumes(h))).toEqual([]);
    expect(await h.mountsUnderDir()).toEqual([]);
    if (PRIVILEGED) {
      expect(await loopDevicesBackedBy(image)).toEqual([]);
    }
  });

  it('publishes the ephemeral volume again at the same target when its mount vanished', async () => {
    // Arrange
    const h = await start();
    const vol = 'csi-ephemeral-repair';
    await publishEphemeral(h, vol);
    await fs.writeFile(path.join(h.target(vol), 'kept.txt'), 'still on the disk');
    if (PRIVILEGED) {
      await run('umount', [h.target(vol)]);
    } else {
      await fs.unlink(h.target(vol));
    }

    // Act
    await publishEphemeral(h, vol);

    // Assert
    expect(await fs.readFile(path.join(h.target(vol), 'kept.txt'), 'utf8')).toBe('still on the disk');
    await h.unpublish(vol);
    expect(await h.mountsUnderDir()).toEqual([]);
    expect(Object.keys(await stateVolumes(h))).toEqual([]);
  });

  it('deletes a new ephemeral volume again when its first publish fails, so nothing needs an unpublish', async () => {
    // Arrange: the target is a file with content, which neither backend may replace or mount on.
    const h = await start();
    const vol = 'csi-ephemeral-fail';
    await fs.mkdir(path.dirname(h.target(vol)), { recursive: true });
    await fs.writeFile(h.target(vol), 'not a directory');

    // Act
    const result = await codeOf(publishEphemeral(h, vol));

    // Assert
    expect(result.code).not.toBe(status.OK);
    expect(await stateVolumes(h)).toEqual({});
    expect(await fs.readdir(path.join(h.dir, 'state', PRIVILEGED ? 'images' : 'disks'))).toEqual([]);
    expect(await fs.readFile(h.target(vol), 'utf8')).toBe('not a directory');
    expect(await h.mountsUnderDir()).toEqual([]);
    if (PRIVILEGED) {
      expect((await run('losetup', ['-a'])).stdout).not.toContain(path.join(h.dir, 'state'));
    }
  });

  it.each([
    {
      name: 'ControllerPublishVolume of an ephemeral volume',
      arrange: (h: Harness) => publishEphemeral(h, 'e'),
      act: (h: Harness) => h.publishController('e'),
      code: FAILED_PRECONDITION,
    },
    {
      name: 'NodeStageVolume of an ephemeral volume',
      arrange: (h: Harness) => publishEphemeral(h, 'e'),
      act: (h: Harness) => h.stage('e'),
      code: FAILED_PRECONDITION,
    },
    {
      name: 'a second target for an ephemeral volume',
      arrange: (h: Harness) => publishEphemeral(h, 'e'),
      act: (h: Harness) => publishEphemeral(h, 'e', { target_path: h.target('e', 'pod-2') }),
      code: FAILED_PRECONDITION,
    },
    {
      name: 'the same ephemeral target published again read-only',
      arrange: (h: Harness) => publishEphemeral(h, 'e'),
      act: (h: Harness) => publishEphemeral(h, 'e', { readonly: true }),
      code: ALREADY_EXISTS,
    },
    {
      name: 'an ephemeral publish of a persistent volume',
      arrange: (h: Harness) => h.publishController('e'),
      act: (h: Harness) => publishEphemeral(h, 'e'),
      code: FAILED_PRECONDITION,
    },
    {
      name: 'an ephemeral publish with a staging path',
      arrange: () => Promise.resolve(),
      act: (h: Harness) => publishEphemeral(h, 'e', { staging_target_path: h.staging('e') }),
      code: INVALID_ARGUMENT,
    },
    {
      name: 'an ephemeral publish with block access',
      arrange: () => Promise.resolve(),
      act: (h: Harness) => publishEphemeral(h, 'e', { volume_capability: { block: {}, access_mode: { mode: 'SINGLE_NODE_WRITER' } } }),
      code: INVALID_ARGUMENT,
    },
    {
      name: 'a persistent publish (no ephemeral flag) without stage',
      arrange: () => Promise.resolve(),
      act: (h: Harness) => publishEphemeral(h, 'e', { volume_context: ephemeralContext({ 'csi.storage.k8s.io/ephemeral': 'false' }) }),
      code: FAILED_PRECONDITION,
    },
  ])('rejects $name', async ({ arrange, act, code }) => {
    const h = await start();
    await arrange(h);
    const result = await codeOf(act(h));
    expect(result.code).toBe(code);
    expect(result.details).not.toBe('');
  });

  it('keeps the ephemeral volume published across a driver restart and still deletes it on unpublish', async () => {
    // Arrange
    const h = await start();
    const vol = 'csi-ephemeral-restart';
    await publishEphemeral(h, vol);
    const image = await h.image(vol);

    // Act
    await h.restart();
    await publishEphemeral(h, vol);
    await h.unpublish(vol);

    // Assert
    expect(Object.keys(await stateVolumes(h))).toEqual([]);
    expect(await h.mountsUnderDir()).toEqual([]);
    if (PRIVILEGED) {
      expect(await loopDevicesBackedBy(image)).toEqual([]);
    }
  });
});
