/**
 * kill-churn: kill -9 of the agent in the middle of pod churn with real mounts, over and over.
 *
 * A fixed set of pod slots; each slot's pod has an emptyDir, a configMap and one persistent
 * volume of its own: a local PV backed by a directory, or (every third slot) a CSI PVC of the
 * csi-loop driver (loop device, ext4). Each cycle toggles a random quarter of the slots (a pod
 * goes, or comes back under a new uid) while the agent runs, kills the agent with SIGKILL at a
 * random moment of that churn, starts a new agent over the same root dir and manifests, and
 * waits until the node converged to the manifests:
 *   - the desired pods are exactly the manifest's, every one of their volumes is mounted for
 *     them (CSI ones attached and device-mounted), and no other pod has anything mounted;
 *   - the mount table agrees: every persistent volume path of a present pod is a mount, and no
 *     removed pod has a mount left in its pod dir;
 *   - within 10 s of the restart (the new process's spawn).
 * Once converged, nothing else may be held (a leak): every other mount below the root dir is the
 * staging mount of a CSI volume in the actual state, there are no more driver loop devices than
 * CSI volumes in use, and the driver has nothing attached or staged for a claim no pod uses.
 * Persistent volumes get a marker file with known content the first time they are mounted; it
 * must be there, unchanged, every later time (and all of them are checked at the end). At the
 * end every pod is removed, the agent and the driver stop, and nothing may stay mounted below
 * the work dir, no loop device of the driver may remain, and the driver must hold nothing.
 */
import { lstat, mkdir, readFile } from 'node:fs/promises';
import { writeFileDurably } from '../../lib/mount-utils/durable-write.ts';
import { join } from 'node:path';
import type { Snapshot } from '../../lib/api/snapshot.ts';
import { pod, podFileName, removeManifest, csiClaim, configMap, type KubeObject } from '../demo/manifests.ts';
import type { Campaign, CampaignOptions, CampaignResult } from './campaign.ts';
import { TortureNode, pause, prng, quantile } from './harness.ts';
import { errorMessage } from '../../lib/volume/errors.ts';

const NAME = 'kill-churn';
const NAMESPACE = 'torture';
const NODE = 'torture-node';
/** Every desired volume mounted within this long after the restart. */
export const CONVERGE_LIMIT_MS = 10_000;
/** How long a cycle keeps waiting after the limit, so one slow cycle does not end the campaign. */
const CONVERGE_GIVE_UP_MS = 60_000;
const MARKER_FILE = 'torture-marker.txt';

const SIZES = {
  short: { cycles: 5, slots: 20 },
  full: { cycles: 100, slots: 100 },
} as const;

type Kind = 'local' | 'csi';

interface Slot {
  index: number;
  kind: Kind;
  claim: string;
  pvName: string;
  /** The uid of the slot's pod in the manifests now; null when the slot has no pod. */
  uid: string | null;
  generation: number;
}

function slotKind(i: number): Kind {
  return i % 3 === 2 ? 'csi' : 'local';
}

function localClaim(i: number, path: string): KubeObject {
  const claim = `data-${i}`;
  const pvName = `pv-local-${i}`;
  const claimUid = `claim-local-${i}`;
  return {
    apiVersion: 'v1',
    kind: 'List',
    items: [
      {
        apiVersion: 'v1',
        kind: 'PersistentVolume',
        metadata: { name: pvName },
        spec: { accessModes: ['ReadWriteOnce'], capacity: { storage: '1Gi' }, claimRef: { namespace: NAMESPACE, name: claim, uid: claimUid }, local: { path } },
        status: { phase: 'Bound' },
      },
      {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { name: claim, namespace: NAMESPACE, uid: claimUid },
        spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, volumeName: pvName },
        status: { phase: 'Bound', capacity: { storage: '1Gi' } },
      },
    ],
  };
}

/** The pod-level path of the slot's persistent volume. */
function persistentPath(rootDir: string, slot: Slot, uid: string): string {
  const volumes = join(rootDir, 'pods', uid, 'volumes');
  return slot.kind === 'csi' ? join(volumes, 'kubernetes.io~csi', slot.pvName, 'mount') : join(volumes, 'kubernetes.io~local-volume', slot.pvName);
}

class KillChurn {
  readonly failures: string[] = [];
  readonly convergeMs: number[] = [];
  readonly restartMs: number[] = [];
  readonly slots: Slot[];
  /** Claim → the marker content written into it. */
  readonly markers = new Map<string, string>();
  markersVerified = 0;
  markersLost = 0;
  changesWritten = 0;
  /** Per cycle with leaks after convergence: what was left. */
  readonly leakCycles: string[] = [];
  private readonly random: () => number;

  constructor(
    readonly node: TortureNode,
    readonly opts: CampaignOptions,
    readonly seed: number,
    slotCount: number,
  ) {
    this.random = prng(seed);
    this.slots = Array.from({ length: slotCount }, (_, i) => {
      const kind = slotKind(i);
      return { index: i, kind, claim: `data-${i}`, pvName: kind === 'csi' ? `pv-${NAMESPACE}-data-${i}` : `pv-local-${i}`, uid: null, generation: 0 };
    });
  }

  get present(): Slot[] {
    return this.slots.filter((s) => s.uid !== null);
  }

  async writeStorage(): Promise<void> {
    await this.node.write('config.yaml', [configMap(NAMESPACE, 'torture-config', { 'app.properties': 'mode=torture\n' })]);
    for (const slot of this.slots) {
      if (slot.kind === 'csi') {
        await this.node.write(`claim-${slot.index}.yaml`, [
          csiClaim({ namespace: NAMESPACE, claim: slot.claim, volumeHandle: `kc-${slot.index}`, claimUid: `claim-csi-${slot.index}`, capacity: '16Mi' }),
        ]);
      } else {
        const dir = join(this.opts.workDir, 'local', String(slot.index));
        await mkdir(dir, { recursive: true });
        await this.node.write(`claim-${slot.index}.yaml`, [localClaim(slot.index, dir)]);
      }
    }
  }

  private podName(slot: Slot): string {
    return `slot-${slot.index}`;
  }

  async addPod(slot: Slot): Promise<void> {
    slot.generation++;
    const uid = `kc-${slot.index}-g${slot.generation}`;
    await this.node.write(
      podFileName(NAMESPACE, this.podName(slot)),
      [pod({ name: this.podName(slot), namespace: NAMESPACE, uid, volumes: { scratch: { emptyDir: {} }, config: { configMap: { name: 'torture-config' } }, data: { persistentVolumeClaim: { claimName: slot.claim } } } })],
    );
    slot.uid = uid;
    this.changesWritten++;
  }

  async removePod(slot: Slot): Promise<void> {
    await removeManifest(this.node.manifestDir, podFileName(NAMESPACE, this.podName(slot)));
    slot.uid = null;
    this.changesWritten++;
  }

  /** Toggles a random quarter of the slots, 0–40 ms apart. */
  async churn(): Promise<void> {
    const count = Math.max(1, Math.round(this.slots.length / 4));
    const picked = new Set<number>();
    while (picked.size < count) picked.add(Math.floor(this.random() * this.slots.length));
    for (const i of picked) {
      const slot = this.slots[i];
      if (slot === undefined) continue;
      if (slot.uid === null) await this.addPod(slot);
      else await this.removePod(slot);
      await pause(Math.floor(this.random() * 40));
    }
  }

  /**
   * Why the node has not converged to the manifests yet, or null when it has (agent state and
   * the pods' mounts; what else the node holds is {@link leaks}).
   */
  async divergence(s: Snapshot): Promise<string | null> {
    const present = this.present;
    const expected = new Set(present.map((p) => p.uid ?? ''));
    if (s.reconstruction.state !== 'done') return `reconstruction ${s.reconstruction.state}`;
    const desired = new Set(s.desired.pods.map((p) => p.uid));
    const missing = [...expected].filter((u) => !desired.has(u));
    const extra = [...desired].filter((u) => !expected.has(u));
    if (missing.length > 0 || extra.length > 0) return `desired pods differ from the manifests: missing ${missing.join(',')} extra ${extra.join(',')}`;
    const byName = new Map(s.actual.volumes.map((v) => [v.uniqueVolumeName, v]));
    for (const p of s.desired.pods) {
      if (p.volumes.length !== 3) return `pod ${p.uid} has ${p.volumes.length} desired volumes, not 3`;
      for (const v of p.volumes) {
        const actual = byName.get(v.uniqueVolumeName);
        const mount = actual?.pods.find((m) => m.podUid === p.uid);
        if (actual === undefined || mount?.mountState !== 'mounted') return `${v.uniqueVolumeName} is not mounted for ${p.uid} (${mount?.mountState ?? 'absent'})`;
        if (v.attachable && actual.attachState !== 'attached') return `${v.uniqueVolumeName} is ${actual.attachState}, not attached`;
        if (v.deviceMountable && actual.deviceMountState !== 'mounted') return `${v.uniqueVolumeName} device is ${actual.deviceMountState}`;
      }
    }
    for (const v of s.actual.volumes) {
      const strangers = v.pods.filter((m) => !expected.has(m.podUid));
      if (strangers.length > 0) return `${v.uniqueVolumeName} is still mounted for removed pod(s) ${strangers.map((m) => m.podUid).join(',')}`;
      if (v.pods.length === 0) return `${v.uniqueVolumeName} is ${v.attachState}/${v.deviceMountState} without any pod`;
    }
    // The mount table: the persistent volumes of present pods are mounts, and no pod dir of another pod has one.
    const mounts = await this.node.mountsBelowRoot();
    const mounted = new Set(mounts);
    for (const slot of present) {
      const path = persistentPath(this.node.rootDir, slot, slot.uid ?? '');
      if (!mounted.has(path) && !(await this.driverMounted(slot, path))) return `${path} is not mounted`;
    }
    for (const m of mounts) {
      const owner = /\/pods\/([^/]+)\/volumes\//.exec(m)?.[1];
      if (owner !== undefined && !expected.has(owner)) return `${m} of removed pod ${owner} is still mounted`;
    }
    return null;
  }

  /** An unprivileged driver "mounts" a CSI volume as a symlink, which no mount table lists. */
  private async driverMounted(slot: Slot, path: string): Promise<boolean> {
    if (slot.kind !== 'csi' || this.node.driverPrivileged) return false;
    return (await lstat(path).catch(() => null))?.isSymbolicLink() === true;
  }

  /**
   * What the converged node holds that no present pod uses: mounts below the root dir other than
   * the pods' own and the staging mounts of the CSI volumes in the actual state, loop devices
   * beyond the CSI volumes in use, and volumes the driver still has attached or staged for a
   * claim no present pod uses.
   */
  async leaks(s: Snapshot): Promise<string[]> {
    const out: string[] = [];
    const expected = new Set(this.present.map((p) => p.uid ?? ''));
    const staging = new Set(s.actual.volumes.map((v) => v.deviceMountPath).filter((p) => p !== ''));
    for (const m of await this.node.mountsBelowRoot()) {
      const owner = /\/pods\/([^/]+)\/volumes\//.exec(m)?.[1];
      if ((owner === undefined || !expected.has(owner)) && !staging.has(m)) out.push(`mount ${m}`);
    }
    const inUse = new Set(this.present.filter((p) => p.kind === 'csi').map((p) => `kc-${p.index}`));
    for (const id of await this.node.busyDriverVolumes()) if (!inUse.has(id)) out.push(`driver volume ${id} still attached/staged`);
    const loops = (await this.node.leftovers()).loopDevices.length;
    if (this.node.driverPrivileged && loops > inUse.size) out.push(`${loops} loop devices for ${inUse.size} CSI volumes in use`);
    return out;
  }

  /**
   * Polls until converged; returns the time from `since` and, when it timed out, the last
   * divergence followed by what the agent knows about the volume it names (see {@link diagnose}).
   */
  async converge(since: number): Promise<{ ms: number; last: string | null }> {
    for (;;) {
      let last: string | null;
      let snapshot: Snapshot | null = null;
      try {
        snapshot = await this.node.snapshot();
        last = await this.divergence(snapshot);
      } catch (err) {
        last = errorMessage(err);
      }
      const ms = performance.now() - since;
      if (last === null) return { ms, last };
      if (ms > CONVERGE_GIVE_UP_MS) return { ms, last: snapshot === null ? last : `${last} [${this.diagnose(snapshot, last)}]` };
      await pause(100);
    }
  }

  /**
   * What the agent says about the unique volume name a divergence mentions: its operations
   * (running or in backoff, with the last error), its failed-operation history, and the last log
   * lines of every agent process of this run that name it. A failure must be debuggable from the
   * campaign's JSON alone: the agents' logs are gone with the work dir.
   */
  diagnose(s: Snapshot, divergence: string): string {
    const volume = /kubernetes\.io\/[^\s,]+/.exec(divergence)?.[0];
    if (volume === undefined) return 'no volume named';
    const ops = s.operations.filter((o) => o.volume === volume).map((o) => `${o.operationName} ${o.podUid ?? '-'} ${o.state} ×${o.failures}: ${o.lastError ?? 'no error'}`);
    const history = s.operationHistory.filter((h) => h.volume === volume).map((h) => JSON.stringify(h).slice(0, 600));
    const logs = this.node.agentLogs((line) => JSON.stringify(line).includes(volume)).slice(-15).map((line) => JSON.stringify(line).slice(0, 400));
    return [`operations: ${ops.length === 0 ? 'none' : ops.join(' | ')}`, `history: ${history.length === 0 ? 'none' : history.join(' | ')}`, `log: ${logs.length === 0 ? 'none' : logs.join(' | ')}`].join('; ');
  }

  /** Checks (or writes, the first time) the marker of every present pod's persistent volume. */
  async checkMarkers(): Promise<void> {
    for (const slot of this.present) {
      const path = join(persistentPath(this.node.rootDir, slot, slot.uid ?? ''), MARKER_FILE);
      const expected = this.markers.get(slot.claim);
      if (expected === undefined) {
        const content = `claim ${slot.claim} first mounted by ${slot.uid ?? ''} (seed ${this.seed})\n`;
        await writeFileDurably(path, content, { mode: 0o644 });
        this.markers.set(slot.claim, content);
        continue;
      }
      const found = await readFile(path, 'utf8').catch((err: unknown) => `(unreadable: ${errorMessage(err)})`);
      if (found === expected) {
        this.markersVerified++;
      } else {
        this.markersLost++;
        this.failures.push(`the marker of ${slot.claim} (${slot.kind}) in pod ${slot.uid ?? ''} is ${JSON.stringify(found.slice(0, 120))}, expected ${JSON.stringify(expected)}`);
      }
    }
  }

  /** One cycle: churn, kill -9 at a random moment of it, restart, converge, check. */
  async cycle(n: number, log: (line: string) => void): Promise<void> {
    const agent = this.node.live;
    const killAfter = Math.floor(this.random() * 1500);
    const churning = this.churn();
    await Promise.race([pause(killAfter), churning]);
    await agent.stop('SIGKILL');
    await churning;
    const spawned = performance.now();
    await this.node.startAgent();
    this.restartMs.push(Math.round(performance.now() - spawned));
    const { ms, last } = await this.converge(spawned);
    this.convergeMs.push(Math.round(ms));
    if (last !== null) {
      this.failures.push(`cycle ${n}: not converged ${Math.round(ms)} ms after the restart: ${last}`);
    } else if (ms > CONVERGE_LIMIT_MS) {
      this.failures.push(`cycle ${n}: converged only ${Math.round(ms)} ms after the restart (limit ${CONVERGE_LIMIT_MS} ms)`);
    }
    const leaks = await this.leaks(await this.node.snapshot());
    if (leaks.length > 0) this.leakCycles.push(`cycle ${n} (killed ${killAfter} ms into the churn): ${leaks.join('; ')}`);
    await this.checkMarkers();
    log(`cycle ${n}: killed ${killAfter} ms into the churn, ${this.present.length} pods, converged in ${Math.round(ms)} ms${last === null ? '' : ` (NOT: ${last})`}`);
  }

  /** Brings every slot up, converges, checks every marker, then removes every pod and drains. */
  async finish(log: (line: string) => void): Promise<void> {
    // First every pod goes: what the node still holds then is a leak (before pods that reuse a claim can clear it).
    for (const slot of this.slots) if (slot.uid !== null) await this.removePod(slot);
    const empty = await this.converge(performance.now());
    if (empty.last !== null) this.failures.push(`final: every pod removed: not drained after ${Math.round(empty.ms)} ms: ${empty.last}`);
    const leaks = await this.leaks(await this.node.snapshot());
    if (leaks.length > 0) this.leakCycles.push(`with every pod removed: ${leaks.join('; ')}`);
    for (const slot of this.slots) if (slot.uid === null) await this.addPod(slot);
    const { ms, last } = await this.converge(performance.now());
    if (last !== null) this.failures.push(`final: every slot up: not converged after ${Math.round(ms)} ms: ${last}`);
    await this.checkMarkers();
    for (const slot of this.slots) await this.removePod(slot);
    const drained = await this.converge(performance.now());
    if (drained.last !== null) this.failures.push(`final: every pod removed: not drained after ${Math.round(drained.ms)} ms: ${drained.last}`);
    log(`final: all ${this.slots.length} slots verified, drained in ${Math.round(drained.ms)} ms`);
  }
}

async function run(opts: CampaignOptions): Promise<CampaignResult> {
  const size = SIZES[opts.size];
  const seed = Number(process.env['VOLUMESCOPE_TORTURE_SEED'] ?? Date.now() % 1_000_000);
  opts.log(`${size.cycles} kills, ${size.slots} pod slots, seed ${seed}`);
  const node = await TortureNode.start({ base: join(opts.workDir, 'node'), nodeName: NODE });
  const campaign = new KillChurn(node, opts, seed, size.slots);
  let leftovers = { mounts: ['(not checked)'], loopDevices: ['(not checked)'] };
  let busy: string[] = [];
  try {
    await campaign.writeStorage();
    // Start with half the slots up, converged, markers written.
    for (const slot of campaign.slots) if (slot.index % 2 === 0) await campaign.addPod(slot);
    const first = await campaign.converge(performance.now());
    if (first.last !== null) campaign.failures.push(`initial pods: not converged: ${first.last}`);
    await campaign.checkMarkers();
    for (let n = 1; n <= size.cycles; n++) await campaign.cycle(n, opts.log);
    await campaign.finish(opts.log);
    busy = await node.busyDriverVolumes();
    await node.stop();
    leftovers = await node.leftovers();
  } catch (err) {
    campaign.failures.push(`aborted: ${errorMessage(err)}`);
  } finally {
    await node.destroy();
  }
  const failures = [...campaign.failures];
  for (const m of leftovers.mounts) failures.push(`leaked mount: ${m}`);
  for (const d of leftovers.loopDevices) failures.push(`leaked loop device: ${d}`);
  for (const v of busy) failures.push(`the driver still holds volume ${v} (published, staged or attached)`);
  for (const l of campaign.leakCycles) failures.push(`leaked after convergence: ${l}`);
  return {
    name: NAME,
    ok: failures.length === 0,
    figures: {
      seed,
      kills: campaign.restartMs.length,
      podSlots: size.slots,
      csiSlots: campaign.slots.filter((s) => s.kind === 'csi').length,
      podChanges: campaign.changesWritten,
      restartToApiMsMax: Math.max(0, ...campaign.restartMs),
      convergeMsP50: quantile(campaign.convergeMs, 0.5),
      convergeMsMax: Math.max(0, ...campaign.convergeMs),
      convergeLimitMs: CONVERGE_LIMIT_MS,
      markersWritten: campaign.markers.size,
      markersVerified: campaign.markersVerified,
      filesLost: campaign.markersLost,
      cyclesWithLeaks: campaign.leakCycles.length,
      leakedMounts: leftovers.mounts.length,
      leakedLoopDevices: leftovers.loopDevices.length,
    },
    failures,
  };
}

export const killChurn: Campaign = { name: NAME, run };
