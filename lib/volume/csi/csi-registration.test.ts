// Driver registration: the --csi-driver flag, the registry's handshake and snapshot, retries
// until a driver comes up, and the plugins_registry watcher with real registration sockets.
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { realClock } from '../../clock/clock.ts';
import { isTransientOperationFailure } from '../errors.ts';
import {
  CsiDriverRegistry,
  isCsiDriverNotRegisteredError,
  isInvalidCsiDriverFlagError,
  parseCsiDriverFlag,
} from './csi-driver-registry.ts';
import { PLUGINS_REGISTRATION_DIR_NAME, PluginWatcher, validateVersions } from './plugin-watcher.ts';
import { CsiLoopProcess, driverMode } from './testing/csi-loop-process.ts';
import { waitFor } from '../../clock/testing/wait-for.ts';
import { DRIVER, finishTestDir, suiteDir, testDir } from './testing/fixtures.ts';

const NODE_ID = 'csi-node-reg';

let suite: string;
let dir: string;
let testCount = 0;
const cleanups: (() => Promise<void> | void)[] = [];

beforeAll(async () => {
  suite = await suiteDir('volumescope-csi-reg-');
});

afterAll(async () => {
  await rm(suite, { recursive: true, force: true });
});

afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function newTestDir(): Promise<string> {
  dir = await testDir(suite, `t${++testCount}`);
  return dir;
}

async function startDriver(opts: { registrationDir?: string; socketPath?: string } = {}): Promise<CsiLoopProcess> {
  const driver = await CsiLoopProcess.start({ dir: join(dir, 'driver'), nodeId: NODE_ID, ...opts });
  const testDirAtStart = dir;
  cleanups.push(async () => {
    await driver.stop();
    expect(await finishTestDir(driver, testDirAtStart)).toEqual({ loopDevices: [], mounts: [] });
  });
  return driver;
}

function newRegistry(opts: { retryInitialMs?: number } = {}): CsiDriverRegistry {
  const registry = new CsiDriverRegistry({ clock: realClock, callTimeoutMs: 5_000, retryInitialMs: opts.retryInitialMs ?? 50, retryMaxMs: 200 });
  cleanups.push(() => {
    registry.close();
  });
  return registry;
}

describe('parseCsiDriverFlag', () => {
  it.each([
    { name: 'a name and an absolute socket path', value: 'a.example=/run/a/csi.sock', want: { name: 'a.example', endpoint: 'unix:///run/a/csi.sock' } },
    { name: 'a name and a unix:// endpoint', value: 'b=unix:///run/b.sock', want: { name: 'b', endpoint: 'unix:///run/b.sock' } },
  ])('accepts $name', ({ value, want }) => {
    expect(parseCsiDriverFlag(value)).toEqual(want);
  });

  it.each([
    { name: 'a value without "="', value: '/run/a.sock' },
    { name: 'an empty name', value: '=/run/a.sock' },
    { name: 'an empty path', value: 'a=' },
    { name: 'a relative path', value: 'a=run/a.sock' },
  ])('refuses $name', ({ value }) => {
    let err: unknown;
    try {
      parseCsiDriverFlag(value);
    } catch (e) {
      err = e;
    }
    expect(isInvalidCsiDriverFlagError(err)).toBe(true);
    expect((err as Error).message).toContain('--csi-driver');
  });
});

describe('validateVersions (the kubelet plugin watcher check)', () => {
  it.each([
    { name: 'a 1.x version is accepted', versions: ['1.0.0'], ok: true },
    { name: 'a v-prefixed 1.x version is accepted', versions: ['0.3.0', 'v1.5'], ok: true },
    { name: 'only 0.x versions are refused', versions: ['0.3.0'], ok: false },
    { name: 'only 2.x versions are refused', versions: ['2.0.0'], ok: false },
    { name: 'an empty list is refused', versions: [], ok: false },
  ])('$name', ({ versions, ok }) => {
    expect(validateVersions('d', versions) === null).toBe(ok);
  });
});

describe(`CSI driver registration against csi-loop (${driverMode})`, () => {
  it('registers a --csi-driver driver after its handshake and shows it in the snapshot', async () => {
    await newTestDir();
    const driver = await startDriver();
    const registry = newRegistry();

    const details = await registry.addDriver(DRIVER, driver.socketPath);

    expect(details).toMatchObject({ source: 'flag', registered: true, nodeId: NODE_ID, lastError: null, maxVolumesPerNode: 0 });
    expect(details.controllerCapabilities).toContain('LIST_VOLUMES_PUBLISHED_NODES');
    expect(details.pluginCapabilities).toEqual(['CONTROLLER_SERVICE', 'VOLUME_EXPANSION_ONLINE']);
    const [snapshot] = registry.drivers();
    expect(snapshot).toEqual({
      name: DRIVER,
      endpoint: driver.endpoint,
      registered: true,
      nodeId: NODE_ID,
      capabilities: ['STAGE_UNSTAGE_VOLUME', 'EXPAND_VOLUME', 'GET_VOLUME_STATS', 'VOLUME_CONDITION'],
      lastProbeAt: expect.any(Number) as number,
      lastError: null,
    });
    expect(await driver.methods()).toEqual(['GetPluginInfo', 'GetPluginCapabilities', 'Probe', 'NodeGetInfo', 'NodeGetCapabilities', 'ControllerGetCapabilities']);
    expect(registry.client(DRIVER).endpoint).toBe(driver.endpoint);
  });

  it('notifies its listeners when closing, after which every driver reads as not registered', async () => {
    // Arrange
    await newTestDir();
    const driver = await startDriver();
    const registry = newRegistry();
    await registry.addDriver(DRIVER, driver.socketPath);
    const seen: boolean[] = [];
    registry.onChange(() => seen.push(registry.drivers().some((d) => d.registered)));

    // Act
    registry.close();
    registry.close();

    // Assert
    expect(seen).toEqual([false]);
  });

  it('keeps retrying a --csi-driver driver that is not up yet and registers it once it answers', async () => {
    const root = await newTestDir();
    const socketPath = join(root, 'late.sock');
    const registry = newRegistry();

    const first = await registry.addDriver(DRIVER, socketPath);
    expect(first.registered).toBe(false);
    expect(first.lastError).toContain('RegisterPlugin error -- CSI driver csi-loop.volumescope.dev');
    expect(first.lastError).toContain('GetPluginInfo failed: rpc error: code = Unavailable');
    let err: unknown;
    try {
      registry.client(DRIVER);
    } catch (e) {
      err = e;
    }
    expect(isCsiDriverNotRegisteredError(err) && isTransientOperationFailure(err)).toBe(true);
    expect((err as Error).message).toBe('driver name csi-loop.volumescope.dev not found in the list of registered CSI drivers');

    await startDriver({ socketPath });
    await registry.whenRegistered(DRIVER);
    expect(registry.drivers()[0]).toMatchObject({ registered: true, nodeId: NODE_ID, lastError: null });
  });

  it('refuses a driver whose GetPluginInfo name differs from the configured one', async () => {
    await newTestDir();
    const driver = await startDriver();
    const registry = newRegistry({ retryInitialMs: 60_000 });

    const details = await registry.addDriver('other.example.com', driver.socketPath);

    expect(details.registered).toBe(false);
    expect(details.lastError).toContain('reports the name "csi-loop.volumescope.dev", not "other.example.com"');
  });

  it('records a failed probe of a registered driver without deregistering it', async () => {
    await newTestDir();
    const driver = await startDriver();
    const registry = newRegistry();
    await registry.addDriver(DRIVER, driver.socketPath);
    await driver.fault('Probe', { code: 'INTERNAL', message: 'disk array offline', failNext: 1 });

    const err = await registry.probe(DRIVER);

    expect(err?.message).toBe('rpc error: code = Internal desc = disk array offline');
    expect(registry.drivers()[0]).toMatchObject({
      registered: true,
      lastError: 'probing CSI driver csi-loop.volumescope.dev failed: rpc error: code = Internal desc = disk array offline',
    });
    expect(await registry.probe(DRIVER)).toBeNull();
    expect(registry.drivers()[0]?.lastError).toBeNull();
  });

  it('registers a driver from its socket in plugins_registry, notifies it, and deregisters it when the socket goes', async () => {
    const root = await newTestDir();
    const registrationDir = join(root, 'kubelet', PLUGINS_REGISTRATION_DIR_NAME);
    const driver = await startDriver({ registrationDir });
    const registry = newRegistry();
    const watcher = new PluginWatcher({ dir: registrationDir, registry, clock: realClock, resyncMs: 100 });
    cleanups.push(() => watcher.stop());

    await watcher.start();
    await registry.whenRegistered(DRIVER);

    expect(registry.drivers()).toEqual([expect.objectContaining({ name: DRIVER, endpoint: driver.endpoint, registered: true, nodeId: NODE_ID })]);
    expect(registry.details(DRIVER)?.source).toBe('plugin-watcher');
    await waitFor(async () => (await driver.state()).registration?.pluginRegistered === true, { what: 'NotifyRegistrationStatus(registered)' });
    expect(watcher.status()).toEqual([
      { socketPath: join(registrationDir, `${DRIVER}-reg.sock`), driverName: DRIVER, registered: true, lastError: null },
    ]);

    await driver.stop();
    await waitFor(() => registry.drivers().length === 0, { what: 'the driver to be deregistered' });
    expect(() => registry.client(DRIVER)).toThrow('driver name csi-loop.volumescope.dev not found in the list of registered CSI drivers');
  });

  it('reports a failed handshake to the plugin through NotifyRegistrationStatus and retries it', async () => {
    const root = await newTestDir();
    const registrationDir = join(root, PLUGINS_REGISTRATION_DIR_NAME);
    const driver = await startDriver({ registrationDir });
    await driver.fault('NodeGetInfo', { code: 'UNAVAILABLE', message: 'node service starting', failNext: 1 });
    const registry = newRegistry();
    const watcher = new PluginWatcher({ dir: registrationDir, registry, clock: realClock, resyncMs: 50 });
    cleanups.push(() => watcher.stop());

    await watcher.start();
    await waitFor(async () => (await driver.state()).registration !== null, { what: 'the first NotifyRegistrationStatus' });
    const firstStatus = (await driver.state()).registration;
    await registry.whenRegistered(DRIVER);

    expect(firstStatus?.pluginRegistered).toBe(false);
    expect(firstStatus?.error).toContain('NodeGetInfo failed: rpc error: code = Unavailable desc = node service starting');
    await waitFor(async () => (await driver.state()).registration?.pluginRegistered === true, { what: 'NotifyRegistrationStatus(registered)' });
  });
});
