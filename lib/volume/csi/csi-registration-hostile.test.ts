// Registrations that try to take a driver name already in use: by --csi-driver, or by another
// live registration socket in plugins_registry. Upstream's RegistrationHandler.validateVersions
// lets a registration with a higher version replace a live driver; here neither kind of holder
// can be replaced by another socket, and the refusal is shown where an operator looks. Drivers
// are in-process fake gRPC servers (registration and CSI services on one socket).
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../clock/fake-clock.ts';
import { CsiDriverRegistry, isCsiDriverRegistrationRefusedError } from './csi-driver-registry.ts';
import { PLUGINS_REGISTRATION_DIR_NAME, PluginWatcher } from './plugin-watcher.ts';
import { FakeCsiServer, handshakeHandlers, registrationHandlers } from './testing/fake-csi-server.ts';
import { RecordingLogger } from './testing/fixtures.ts';

const NAME = 'hostile.example.com';

let dir: string;
let regDir: string;
let clock: FakeClock;
let log: RecordingLogger;
let registry: CsiDriverRegistry;
let watcher: PluginWatcher;
const servers = new Set<FakeCsiServer>();

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'vs-csi-reg-'));
  regDir = join(dir, PLUGINS_REGISTRATION_DIR_NAME);
  await mkdir(regDir);
  clock = new FakeClock(1_000);
  log = new RecordingLogger();
  registry = new CsiDriverRegistry({ clock, logger: log, callTimeoutMs: 10_000 });
  // A fake clock: no resync fires by itself; each test scans when it wants.
  watcher = new PluginWatcher({ dir: regDir, registry, clock, logger: log, callTimeoutMs: 10_000 });
});

afterEach(async () => {
  await watcher.stop();
  registry.close();
  for (const s of servers) await s.stop();
  servers.clear();
  await rm(dir, { recursive: true, force: true });
});

/** A driver serving the CSI handshake; with `registration`, also a registration socket announcing `name` (endpoint: itself). */
async function driver(socketPath: string, opts: { name?: string; nodeId?: string; registration?: boolean } = {}): Promise<FakeCsiServer> {
  const name = opts.name ?? NAME;
  const server = await FakeCsiServer.start(socketPath, {
    ...handshakeHandlers(name, opts.nodeId ?? 'node-a'),
    ...(opts.registration === true ? registrationHandlers(name) : {}),
  });
  servers.add(server);
  return server;
}

async function stopDriver(server: FakeCsiServer): Promise<void> {
  servers.delete(server);
  await server.stop();
}

function csiCalls(server: FakeCsiServer): string[] {
  return server.calls.map((c) => c.method).filter((m) => m !== 'GetInfo' && m !== 'NotifyRegistrationStatus');
}

describe('RegistrationHandler.RegisterPlugin of a name already taken', () => {
  it('refuses a registration socket that claims a --csi-driver name, shows it on the flag driver, and forgets it when the socket goes', async () => {
    const flagDriver = await driver(join(dir, 'flag.sock'), { nodeId: 'node-flag' });
    expect((await registry.addDriver(NAME, flagDriver.socketPath)).registered).toBe(true);
    const hostile = await driver(join(regDir, 'hostile-reg.sock'), { nodeId: 'node-hostile', registration: true });

    await watcher.start();
    await watcher.scanNow();

    const refusal = `kubernetes.io/csi: RegisterPlugin for CSI driver "${NAME}" failed. The name is taken by --csi-driver (endpoint ${flagDriver.endpoint}); the registration from socket ${hostile.socketPath} (endpoint ${hostile.endpoint}) is refused`;
    expect(registry.client(NAME).endpoint).toBe(flagDriver.endpoint);
    expect(registry.drivers()).toEqual([expect.objectContaining({ name: NAME, endpoint: flagDriver.endpoint, registered: true, nodeId: 'node-flag', lastError: refusal })]);
    expect(watcher.status()).toEqual([{ socketPath: hostile.socketPath, driverName: NAME, registered: false, lastError: refusal }]);
    expect(hostile.callsOf('NotifyRegistrationStatus')).toEqual([{ plugin_registered: false, error: refusal }]);
    expect(csiCalls(hostile)).toEqual([]);
    expect(log.lines.filter((l) => l.startsWith(`warn ${refusal}`))).toHaveLength(1);

    // Retried at every resync: still refused, logged once.
    await watcher.scanNow();
    expect(hostile.callsOf('NotifyRegistrationStatus')).toHaveLength(2);
    expect(log.lines.filter((l) => l.startsWith(`warn ${refusal}`))).toHaveLength(1);

    await stopDriver(hostile);
    await watcher.scanNow();

    expect(registry.drivers()).toEqual([expect.objectContaining({ name: NAME, endpoint: flagDriver.endpoint, registered: true, lastError: null })]);
    expect(registry.client(NAME).endpoint).toBe(flagDriver.endpoint);
  });

  it('refuses a second live registration socket of the same name until the first socket is removed', async () => {
    const first = await driver(join(regDir, 'a-reg.sock'), { nodeId: 'node-first', registration: true });
    await watcher.start();
    await watcher.scanNow();
    expect(registry.drivers()).toEqual([expect.objectContaining({ endpoint: first.endpoint, registered: true, nodeId: 'node-first', lastError: null })]);

    const second = await driver(join(regDir, 'b-reg.sock'), { nodeId: 'node-second', registration: true });
    await watcher.scanNow();

    const refusal = `kubernetes.io/csi: RegisterPlugin for CSI driver "${NAME}" failed. The name is taken by the registration from socket ${first.socketPath} (endpoint ${first.endpoint}) until that socket is removed; the registration from socket ${second.socketPath} (endpoint ${second.endpoint}) is refused`;
    expect(registry.drivers()).toEqual([expect.objectContaining({ endpoint: first.endpoint, registered: true, nodeId: 'node-first', lastError: refusal })]);
    expect(registry.client(NAME).endpoint).toBe(first.endpoint);
    // Refused at every scan: the socket's own directory event may start one more scan than scanNow.
    const notified = second.callsOf('NotifyRegistrationStatus');
    expect(notified.length).toBeGreaterThanOrEqual(1);
    expect(notified).toEqual(notified.map(() => ({ plugin_registered: false, error: refusal })));
    expect(csiCalls(second)).toEqual([]);

    await stopDriver(first);
    await watcher.scanNow();

    expect(registry.drivers()).toEqual([expect.objectContaining({ endpoint: second.endpoint, registered: true, nodeId: 'node-second', lastError: null })]);
    expect(second.callsOf('NotifyRegistrationStatus').at(-1)).toEqual({ plugin_registered: true, error: '' });
  });

  it('lets a restarted driver register again from the same socket, while another socket waiting for the name stays refused', async () => {
    const socket = join(regDir, 'a-reg.sock');
    const before = await driver(socket, { nodeId: 'node-before', registration: true });
    await watcher.start();
    await watcher.scanNow();
    const waiting = await driver(join(regDir, 'b-reg.sock'), { nodeId: 'node-waiting', registration: true });
    await watcher.scanNow();
    expect(registry.drivers()[0]).toMatchObject({ endpoint: before.endpoint, nodeId: 'node-before' });

    // The driver restarts: its socket is removed and created again (a new inode) before the next scan.
    await stopDriver(before);
    const after = await driver(socket, { nodeId: 'node-after', registration: true });
    await watcher.scanNow();

    expect(registry.drivers()).toEqual([expect.objectContaining({ endpoint: after.endpoint, registered: true, nodeId: 'node-after' })]);
    expect(registry.drivers()[0]?.lastError).toContain(`the registration from socket ${waiting.socketPath}`);
    expect(csiCalls(after)).toContain('NodeGetInfo');
    expect(after.callsOf('NotifyRegistrationStatus')).toEqual([{ plugin_registered: true, error: '' }]);
    expect(csiCalls(waiting)).toEqual([]);
  });

  it('deregisters the old name when a replaced socket announces another one', async () => {
    const socket = join(regDir, 'a-reg.sock');
    const before = await driver(socket, { registration: true });
    await watcher.start();
    await watcher.scanNow();

    await stopDriver(before);
    await driver(socket, { name: 'other.example.com', registration: true });
    await watcher.scanNow();

    expect(registry.drivers().map((d) => [d.name, d.registered])).toEqual([['other.example.com', true]]);
  });

  it('refuses a registration name longer than a CSI driver name may be', async () => {
    const longName = `${'x'.repeat(64)}.example.com`;
    const server = await driver(join(regDir, 'long-reg.sock'), { name: longName, registration: true });

    await watcher.start();
    await watcher.scanNow();

    expect(registry.drivers()).toEqual([]);
    expect(server.callsOf('NotifyRegistrationStatus')[0]?.['error']).toContain(`The name has ${longName.length} characters, more than the 63 a CSI driver name may have`);
  });

  it('refuses a second --csi-driver for the same name', async () => {
    const a = await driver(join(dir, 'a.sock'));
    await registry.addDriver(NAME, a.socketPath);

    const err = await registry.addDriver(NAME, join(dir, 'b.sock')).then(
      () => null,
      (e: unknown) => e,
    );

    expect(isCsiDriverRegistrationRefusedError(err)).toBe(true);
    expect((err as Error).message).toBe(`--csi-driver ${NAME} is given twice (${a.endpoint} and unix://${join(dir, 'b.sock')})`);
    expect(registry.client(NAME).endpoint).toBe(a.endpoint);
  });
});
