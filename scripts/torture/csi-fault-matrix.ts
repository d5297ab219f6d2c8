/**
 * csi-fault-matrix: every CSI RPC the node side calls × {final code, uncertain code, hang until
 * the deadline, fail the next 3 calls}, each cell against a real agent (`--csi-timeout 1s`) and
 * the real csi-loop driver with its fault injection (PUT /faults/<Method>).
 *
 * Per cell: the fault is set, then the pod that needs the RPC is added (setup RPCs) or removed
 * after it was mounted (teardown RPCs). While the operation backs off, the snapshot's actual
 * state must be exactly what upstream v1.34 leaves (kubernetes/kubernetes
 * pkg/volume/util/operationexecutor/operation_generator.go@v1.34, pkg/volume/csi/csi_client.go,
 * csi_attacher.go, csi_mounter.go@v1.34):
 *   - ControllerPublishVolume (standalone attach) fails: the kubelet's actual state's
 *     MarkVolumeAsUncertain does nothing, so the volume is not in the actual state at all;
 *   - NodeGetCapabilities fails (the STAGE_UNSTAGE_VOLUME probe of MountDevice): the error is
 *     returned as is, never an uncertain-progress error: attached, device not mounted;
 *   - NodeStageVolume: a final code (anything but Canceled, DeadlineExceeded, Unavailable,
 *     ResourceExhausted, Aborted: csi_client.go isFinalError) leaves the device not mounted; a
 *     non-final code or the deadline leaves it uncertain;
 *   - NodePublishVolume: the same for the pod's mount (absent vs uncertain), device mounted;
 *   - NodeUnpublishVolume (TearDown) fails with any code: the pod's mount becomes uncertain;
 *   - NodeUnstageVolume (UnmountDevice) fails with any code: the device becomes uncertain;
 *   - ControllerUnpublishVolume (Detach) fails: still attached, device not mounted, no pods.
 * The backoff the snapshot's pending operation reports must be 500 ms, 1 s, 2 s for the first
 * three failures, and the driver's call log must show the retries that far apart (arrival of a
 * retry minus the end of the failed call; tolerance -50 ms / +1.5 s for a loaded machine). Once
 * the fault stops (cleared after the third failure, or exhausted for fail-next), the volume
 * must recover: mounted for the pod (setup RPCs) or gone from the node (teardown RPCs), with
 * nothing left at the driver. NodeExpandVolume is not part of the matrix (no expansion here).
 *
 * The four fault kinds run as four lanes at once, each with its own driver and agent (a fault
 * is per method at the driver, so lanes must not share one); a lane runs its RPCs one by one.
 */
import { join } from 'node:path';
import type { ActualVolume, Operation, Snapshot } from '../../lib/api/snapshot.ts';
import type { DriverCall, FaultSpec } from '../../lib/volume/csi/testing/csi-loop-process.ts';
import { csiClaim, pod, podFileName, removeManifest } from '../demo/manifests.ts';
import type { Campaign, CampaignOptions, CampaignResult } from './campaign.ts';
import { CSI_DRIVER_NAME, TortureNode, pause } from './harness.ts';
import { errorMessage } from '../../lib/volume/errors.ts';

const NAME = 'csi-fault-matrix';
const NAMESPACE = 'fm';
/** The agent's CSI call deadline: a hung call expires after this. */
const CSI_TIMEOUT = '1s';
/** The kubelet's exponential backoff: 500 ms initial, doubling. */
export const EXPECTED_WINDOWS_MS = [500, 1000, 2000] as const;
const GAP_EARLY_MS = 50;
const GAP_LATE_MS = 1500;
const PHASE_DEADLINE_MS = 40_000;

export const FAULT_KINDS = ['final', 'uncertain', 'hang', 'fail-next-3'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export const RPCS = [
  'ControllerPublishVolume',
  'NodeGetCapabilities',
  'NodeStageVolume',
  'NodePublishVolume',
  'NodeUnpublishVolume',
  'NodeUnstageVolume',
  'ControllerUnpublishVolume',
] as const;
export type Rpc = (typeof RPCS)[number];

const FAULTS: Record<FaultKind, FaultSpec> = {
  final: { code: 'INTERNAL', message: 'torture: final fault' },
  uncertain: { code: 'UNAVAILABLE', message: 'torture: uncertain fault' },
  hang: { hang: true },
  'fail-next-3': { code: 'INTERNAL', message: 'torture: fail next 3', failNext: 3 },
};

/** The gRPC codes the driver logs for a failed call of the kind. */
const FAILED_CODES: Record<FaultKind, readonly string[]> = {
  final: ['INTERNAL'],
  uncertain: ['UNAVAILABLE'],
  hang: ['DEADLINE_EXCEEDED', 'CANCELLED'],
  'fail-next-3': ['INTERNAL'],
};

/** What the actual state shows for the cell's volume while its operation backs off. */
type ExpectedState = 'absent' | { attachState: ActualVolume['attachState']; deviceMountState: ActualVolume['deviceMountState']; podMount: 'none' | 'mounted' | 'uncertain' };

interface CellPlan {
  phase: 'setup' | 'teardown';
  /** The pending operation that fails (kubelet operation names). */
  operation: string;
  expected: ExpectedState;
}

/** Whether the kind leaves the RPC's progress unknown: a non-final code or the deadline. */
function uncertainKind(kind: FaultKind): boolean {
  return kind === 'uncertain' || kind === 'hang';
}

/** The upstream v1.34 expectations of one cell (see the module comment). */
export function planCell(rpc: Rpc, kind: FaultKind): CellPlan {
  switch (rpc) {
    case 'ControllerPublishVolume':
      return { phase: 'setup', operation: 'volume_attach', expected: 'absent' };
    case 'NodeGetCapabilities':
      return { phase: 'setup', operation: 'volume_mount', expected: { attachState: 'attached', deviceMountState: 'not-mounted', podMount: 'none' } };
    case 'NodeStageVolume':
      return { phase: 'setup', operation: 'volume_mount', expected: { attachState: 'attached', deviceMountState: uncertainKind(kind) ? 'uncertain' : 'not-mounted', podMount: 'none' } };
    case 'NodePublishVolume':
      return { phase: 'setup', operation: 'volume_mount', expected: { attachState: 'attached', deviceMountState: 'mounted', podMount: uncertainKind(kind) ? 'uncertain' : 'none' } };
    case 'NodeUnpublishVolume':
      return { phase: 'teardown', operation: 'volume_unmount', expected: { attachState: 'attached', deviceMountState: 'mounted', podMount: 'uncertain' } };
    case 'NodeUnstageVolume':
      return { phase: 'teardown', operation: 'unmount_device', expected: { attachState: 'attached', deviceMountState: 'uncertain', podMount: 'none' } };
    case 'ControllerUnpublishVolume':
      return { phase: 'teardown', operation: 'volume_detach', expected: { attachState: 'attached', deviceMountState: 'not-mounted', podMount: 'none' } };
  }
}

function describeState(v: ActualVolume | undefined, uid: string): string {
  if (v === undefined) return 'absent';
  const m = v.pods.find((p) => p.podUid === uid);
  return `${v.attachState}/${v.deviceMountState}/pod ${m?.mountState ?? 'none'}${v.pods.length > (m === undefined ? 0 : 1) ? ' (+other pods)' : ''}`;
}

function describeExpected(e: ExpectedState): string {
  return e === 'absent' ? 'absent' : `${e.attachState}/${e.deviceMountState}/pod ${e.podMount}`;
}

function uniqueName(handle: string): string {
  return `kubernetes.io/csi/${CSI_DRIVER_NAME}^${handle}`;
}

function shortRpc(rpc: Rpc): string {
  return rpc.replace(/Volume$/, '').replace(/[a-z]/g, '').toLowerCase();
}

/** A call log entry with its arrival time (ISO), which the driver's `GET /calls` carries. */
type TimedCall = DriverCall & { time: string };

interface CellResult {
  cell: string;
  failures: string[];
  windows: number[];
  gaps: number[];
  recoveryMs: number;
}

class Lane {
  constructor(
    readonly node: TortureNode,
    readonly kind: FaultKind,
  ) {}

  private podFile(name: string): string {
    return podFileName(NAMESPACE, name);
  }

  private async addPod(handle: string, name: string, uid: string): Promise<void> {
    await this.node.write(`claim-${handle}.yaml`, [csiClaim({ namespace: NAMESPACE, claim: handle, volumeHandle: handle, claimUid: `claim-${handle}`, capacity: '16Mi' })]);
    await this.node.write(this.podFile(name), [pod({ name, namespace: NAMESPACE, uid, volumes: { data: { persistentVolumeClaim: { claimName: handle } } } })]);
  }

  private async waitSnapshot<T>(what: string, probe: (s: Snapshot) => T | undefined | false): Promise<T> {
    return this.node.live.waitForSnapshot(what, probe, PHASE_DEADLINE_MS);
  }

  private mountedFor(s: Snapshot, handle: string, uid: string): boolean {
    const v = s.actual.volumes.find((a) => a.uniqueVolumeName === uniqueName(handle));
    return v?.attachState === 'attached' && v.deviceMountState === 'mounted' && v.pods.some((p) => p.podUid === uid && p.mountState === 'mounted');
  }

  private gone(s: Snapshot, handle: string): boolean {
    return !s.actual.volumes.some((a) => a.uniqueVolumeName === uniqueName(handle));
  }

  async cell(rpc: Rpc): Promise<CellResult> {
    const plan = planCell(rpc, this.kind);
    const handle = `fm-${shortRpc(rpc)}-${this.kind}`;
    const name = `p-${handle}`;
    const uid = `${handle}-uid`;
    const unique = uniqueName(handle);
    const result: CellResult = { cell: `${rpc} × ${this.kind}`, failures: [], windows: [], gaps: [], recoveryMs: 0 };
    const fail = (line: string): void => {
      result.failures.push(`${result.cell}: ${line}`);
    };

    if (plan.phase === 'teardown') {
      await this.addPod(handle, name, uid);
      await this.waitSnapshot('the volume is mounted before the fault', (s) => this.mountedFor(s, handle, uid));
    }
    await this.node.driver.clearCalls();
    await this.node.driver.fault(rpc, FAULTS[this.kind]);
    if (plan.phase === 'setup') await this.addPod(handle, name, uid);
    else await removeManifest(this.node.manifestDir, this.podFile(name));

    // While failing: the state in every backoff, and the window after each failure.
    const windows: (number | undefined)[] = [];
    let mismatches = 0;
    let firstMismatch = '';
    let last: Operation | undefined;
    try {
      await this.waitSnapshot(`three ${plan.operation} failures`, (s) => {
        const op = s.operations.find((o) => o.operationName === plan.operation && o.volume === unique);
        last = op;
        if (op === undefined || op.failures === 0) return false;
        windows[op.failures - 1] ??= op.durationBeforeRetryMs;
        if (op.state === 'backoff') {
          const v = s.actual.volumes.find((a) => a.uniqueVolumeName === unique);
          const got = describeState(v, uid);
          const want = describeExpected(plan.expected);
          if (got !== want) {
            mismatches++;
            firstMismatch ||= `after failure ${op.failures}: actual state ${got}, expected ${want} (${op.lastError ?? ''})`;
          }
        }
        return op.failures >= 3 && op.state === 'backoff';
      });
    } catch (err) {
      fail(`${errorMessage(err)}; last operation: ${JSON.stringify(last ?? null)}`);
    }
    if (mismatches > 0) fail(`${mismatches} snapshot(s) with the wrong actual state; first ${firstMismatch}`);
    result.windows = windows.slice(0, 3).map((w) => w ?? -1);
    if (result.windows.join(',') !== EXPECTED_WINDOWS_MS.join(',')) fail(`backoff windows ${result.windows.join(', ')} ms, expected ${EXPECTED_WINDOWS_MS.join(', ')}`);

    // The fault stops; the volume recovers.
    const stopped = performance.now();
    if (this.kind !== 'fail-next-3') await this.node.driver.control('DELETE', `/faults/${rpc}`);
    try {
      await this.waitSnapshot('recovery', (s) => (plan.phase === 'setup' ? this.mountedFor(s, handle, uid) : this.gone(s, handle)));
    } catch (err) {
      fail(`no recovery after the fault stopped: ${errorMessage(err)}`);
    }
    result.recoveryMs = Math.round(performance.now() - stopped);

    // The driver's view: three failed calls with the kind's code, then success, spaced by the windows.
    const calls = ((await this.node.driver.calls()) as TimedCall[]).filter((c) => c.method === rpc && (rpc === 'NodeGetCapabilities' || c.volumeId === handle));
    this.checkCalls(calls, result, fail);

    // Clean up the cell: the pod goes (setup cells); nothing of the volume may stay anywhere.
    if (plan.phase === 'setup') {
      await removeManifest(this.node.manifestDir, this.podFile(name));
      try {
        await this.waitSnapshot('the volume is gone after the cell', (s) => this.gone(s, handle));
      } catch (err) {
        fail(`cleanup: ${errorMessage(err)}`);
      }
    }
    await removeManifest(this.node.manifestDir, `claim-${handle}.yaml`);
    if ((await this.node.busyDriverVolumes()).includes(handle)) fail('the driver still holds the volume after the cell');
    const podMounts = (await this.node.mountsBelowRoot()).filter((m) => m.includes(`/pods/${uid}/`) || m.includes(handle));
    if (podMounts.length > 0) fail(`left mounted: ${podMounts.join(', ')}`);
    return result;
  }

  private checkCalls(calls: readonly TimedCall[], result: CellResult, fail: (line: string) => void): void {
    const firstOk = calls.findIndex((c) => c.code === 'OK');
    const failed = firstOk === -1 ? calls : calls.slice(0, firstOk);
    if (firstOk === -1) fail(`the driver never answered ${calls[0]?.method ?? 'the RPC'} OK after the fault stopped`);
    const codes = failed.map((c) => c.code);
    if (codes.length !== 3 || !codes.every((c) => FAILED_CODES[this.kind].includes(c))) {
      fail(`failed calls ${codes.join(', ') || '(none)'}, expected 3 × ${FAILED_CODES[this.kind].join('|')}`);
    }
    const attempts = firstOk === -1 ? failed : calls.slice(0, firstOk + 1);
    for (let k = 0; k + 1 < attempts.length && k < EXPECTED_WINDOWS_MS.length; k++) {
      const a = attempts[k];
      const b = attempts[k + 1];
      if (a === undefined || b === undefined) continue;
      const gap = Date.parse(b.time) - (Date.parse(a.time) + a.durationMs);
      result.gaps.push(Math.round(gap));
      const window = EXPECTED_WINDOWS_MS[k] ?? 0;
      if (gap < window - GAP_EARLY_MS || gap > window + GAP_LATE_MS) fail(`retry ${k + 1} came ${Math.round(gap)} ms after the failed call, expected ${window} ms (−${GAP_EARLY_MS}/+${GAP_LATE_MS})`);
    }
  }
}

async function runLane(kind: FaultKind, opts: CampaignOptions): Promise<CellResult[]> {
  const node = await TortureNode.start({ base: join(opts.workDir, kind), nodeName: `fm-${kind}`, agentArgs: ['--csi-timeout', CSI_TIMEOUT] });
  const lane = new Lane(node, kind);
  const results: CellResult[] = [];
  try {
    for (const rpc of RPCS) {
      let r: CellResult;
      try {
        r = await lane.cell(rpc);
      } catch (err) {
        r = { cell: `${rpc} × ${kind}`, failures: [`${rpc} × ${kind}: aborted: ${errorMessage(err)}`], windows: [], gaps: [], recoveryMs: 0 };
        await node.driver.clearFaults();
      }
      opts.log(`${r.cell}: ${r.failures.length === 0 ? 'ok' : 'FAILED'} windows ${r.windows.join('/')} gaps ${r.gaps.join('/')} recovery ${r.recoveryMs} ms`);
      results.push(r);
    }
    await node.driver.clearFaults();
    await node.stop();
    const left = await node.leftovers();
    if (left.mounts.length > 0 || left.loopDevices.length > 0) {
      results.push({ cell: `lane ${kind}`, failures: [`lane ${kind}: left behind ${[...left.mounts, ...left.loopDevices].join(', ')}`], windows: [], gaps: [], recoveryMs: 0 });
    }
  } finally {
    await node.destroy();
  }
  return results;
}

async function run(opts: CampaignOptions): Promise<CampaignResult> {
  opts.log(`${RPCS.length} RPCs × ${FAULT_KINDS.length} fault kinds, ${FAULT_KINDS.length} lanes in parallel, --csi-timeout ${CSI_TIMEOUT}`);
  // Staggered starts, so the lanes' cells do not all hit the machine at the same moment.
  const lanes = await Promise.all(
    FAULT_KINDS.map(async (kind, i) => {
      await pause(i * 1500);
      try {
        return await runLane(kind, opts);
      } catch (err) {
        return [{ cell: `lane ${kind}`, failures: [`lane ${kind}: ${errorMessage(err)}`], windows: [], gaps: [], recoveryMs: 0 }];
      }
    }),
  );
  const cells = lanes.flat();
  const failures = cells.flatMap((c) => c.failures);
  const figures: Record<string, number | string> = {
    cells: RPCS.length * FAULT_KINDS.length,
    cellsPassed: cells.filter((c) => c.failures.length === 0 && !c.cell.startsWith('lane ')).length,
    csiTimeout: CSI_TIMEOUT,
  };
  for (const c of cells) {
    if (c.cell.startsWith('lane ')) continue;
    figures[c.cell] = `${c.failures.length === 0 ? 'ok' : 'FAILED'}; windows ${c.windows.join('/')} ms; retry gaps ${c.gaps.join('/')} ms; recovery ${c.recoveryMs} ms`;
  }
  return { name: NAME, ok: failures.length === 0, figures, failures };
}

export const csiFaultMatrix: Campaign = { name: NAME, run };
