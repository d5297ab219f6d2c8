/**
 * The node truth diff of observe mode (the volumesInUse/volumesAttached handshake and
 * VolumeAttachments, see docs/api.md `truthDiff`): per volume, what each
 * source of truth says, and a verdict per disagreement, phrased for operators.
 *
 * Sources, all passed in as plain data (any may be left out; its checks are then skipped):
 * - the agent's view: desired and actual state from the engine running beside the kubelet;
 * - `node.status.volumesInUse` (written by the kubelet: "I want or have this device-mounted") and
 *   `node.status.volumesAttached` (written by the attach/detach controller: "attached, you may
 *   mount it");
 * - the VolumeAttachments of this node (written by the controller and external-attacher);
 * - the mount table: global (staging) mounts at
 *   `<root>/plugins/kubernetes.io/csi/<driver>/<sha256(volumeHandle)>/globalmount` (older
 *   kubelets: `…/kubernetes.io/csi/pv/<pvName>/globalmount`; the escaped plugin directory
 *   `kubernetes.io~csi` is accepted too) and pod mounts at
 *   `<root>/pods/<uid>/volumes/<escaped plugin>/<specName>` (CSI: `…/<specName>/mount`).
 *
 * Everything is keyed by the unique volume name the node status uses (see
 * {@link csiUniqueVolumeName}); VolumeAttachments and CSI mounts are mapped to it through the
 * PVs, the agent's view and the known volume handles (the staging directory holds the handle's
 * SHA-256, which is matched against every handle known from the other sources). What cannot be
 * mapped gets a row of its own keyed by the object or path.
 *
 * Pure: no I/O and no clock; the same input gives the same output.
 */
import { createHash } from 'node:crypto';
import { relative, sep } from 'node:path';
import { DefaultKubeletPluginsDirName, DefaultKubeletPodsDirName, DefaultKubeletVolumesDirName } from '../kubelet-constants.ts';
import { pathWithinOrEqual } from '../mount-utils/mount-table.ts';
import type { MountInfo } from '../mount-utils/mountinfo.ts';
import { CSI_PLUGIN_NAME, GLOBAL_MOUNT_DIR_NAME, PUBLISH_DIR_NAME } from '../volume/csi/vol-data.ts';
import type { AttachedVolumeStatus, PersistentVolume } from '../volume/k8s-types.ts';
import { parseCsiUniqueVolumeName, persistentVolumeUniqueName, volumeAttachmentVolumeName } from './volume-attachment.ts';
import type { VolumeAttachment } from './volume-attachment.ts';

export { csiUniqueVolumeName } from './volume-attachment.ts';

/** One pod's use of a volume in the agent's view. */
export interface AgentPodVolume {
  podUID: string;
  /** The volume's directory name under `pods/<uid>/volumes/<plugin>/` (the inner spec name: the PV name for PVCs). */
  specName: string;
  /** Actual state only: `uncertain` for a mount that may or may not have happened (e.g. reconstructed). */
  mountState?: 'mounted' | 'uncertain';
}

/** One volume in the agent's desired or actual state. */
export interface AgentVolume {
  /** Unique volume name. */
  volumeName: string;
  /** Plugin name (`kubernetes.io/csi`, `kubernetes.io/secret`); derived from the volume name when absent. */
  pluginName?: string;
  /** The plugin attaches it (so it belongs in volumesInUse and volumesAttached). Unknown when absent. */
  attachable?: boolean;
  /**
   * Setting up the volume leaves a mount under the pod directory (CSI, secret, projected, …; not
   * a disk-backed emptyDir, configMap or hostPath). Default: true for CSI volumes, unknown (no
   * mount checks) otherwise.
   */
  expectsPodMount?: boolean;
  /** Actual state only: the device (staging) mount. */
  deviceMountState?: 'mounted' | 'uncertain' | 'not-mounted';
  pods: AgentPodVolume[];
}

export interface AgentView {
  desired: readonly AgentVolume[];
  actual: readonly AgentVolume[];
}

export interface TruthDiffInput {
  nodeName: string;
  /** The kubelet root as it appears in mountinfo (resolved, no trailing slash). */
  rootDir: string;
  agent?: AgentView;
  nodeStatus?: { volumesInUse?: readonly string[]; volumesAttached?: readonly AttachedVolumeStatus[] };
  /** VolumeAttachments; those of other nodes are ignored. */
  volumeAttachments?: readonly VolumeAttachment[];
  /** PVs, to map VolumeAttachments and CSI pod mounts to unique names. */
  persistentVolumes?: readonly PersistentVolume[];
  mountInfo?: readonly MountInfo[];
}

/** Stable verdict codes. */
export type TruthVerdictCode =
  | 'in-use-not-attached'
  | 'attached-not-in-use'
  | 'va-attached-not-in-node-status'
  | 'attached-without-va'
  | 'va-not-attached'
  | 'va-error'
  | 'va-deleting'
  | 'va-unmapped'
  | 'desired-not-in-use'
  | 'in-use-not-desired'
  | 'desired-not-mounted'
  | 'mounted-not-desired'
  | 'actual-not-mounted'
  | 'mounted-not-actual'
  | 'global-mount-without-pod-mounts'
  | 'mount-unmapped';

export type TruthSeverity = 'info' | 'warning' | 'error';

export interface TruthFinding {
  code: TruthVerdictCode;
  severity: TruthSeverity;
  /** One line for operators. */
  explanation: string;
}

export interface TruthVolumeAttachment {
  name: string;
  attached: boolean;
  attachError?: string;
  detachError?: string;
  /** RFC 3339 deletion timestamp when the object is being deleted (detach in progress). */
  deletionTimestamp?: string;
}

export interface TruthPodMount {
  podUID: string;
  specName: string;
  mountPoint: string;
}

export interface TruthDiffRow {
  /** The unique volume name, or `va:<name>` / `mount:<path>` for what could not be mapped. */
  key: string;
  volumeName: string | null;
  /** Pods of the agent's desired state (UIDs), or null when the volume is not desired. */
  desiredPods: string[] | null;
  /** Pods of the agent's actual state with their mount state, or null when absent. */
  actualPods: { podUID: string; mountState: 'mounted' | 'uncertain' }[] | null;
  inUse: boolean;
  /** The `volumesAttached` entry's device path, or null when not listed. */
  attachedDevicePath: string | null;
  volumeAttachments: TruthVolumeAttachment[];
  globalMounts: string[];
  podMounts: TruthPodMount[];
  /** Empty when all sources agree. */
  findings: TruthFinding[];
}

export interface TruthDiff {
  nodeName: string;
  rows: TruthDiffRow[];
}

/** Where a mount point lies in the kubelet layout. */
export type KubeletMountLocation =
  | { kind: 'pod'; podUID: string; pluginDir: string; specName: string }
  | { kind: 'csi-global'; driver: string; handleSha256: string }
  | { kind: 'csi-global-legacy'; pvName: string };

/**
 * Classifies a mount point under the kubelet root: a pod volume mount (the volume directory
 * itself, or for CSI its `mount/` child), a CSI staging mount, or null for anything else.
 */
export function kubeletMountLocation(rootDir: string, mountPoint: string): KubeletMountLocation | null {
  if (!pathWithinOrEqual(mountPoint, rootDir) || mountPoint === rootDir) return null;
  const parts = relative(rootDir, mountPoint).split(sep);
  const csiPluginDirs = [CSI_PLUGIN_NAME.replaceAll('/', '~')];
  if (parts[0] === DefaultKubeletPodsDirName && parts[2] === DefaultKubeletVolumesDirName) {
    const [, podUID = '', , pluginDir = '', specName = '', last] = parts;
    if (pluginDir === '' || specName === '') return null;
    const isCsi = csiPluginDirs.includes(pluginDir);
    if (isCsi ? parts.length === 6 && last === PUBLISH_DIR_NAME : parts.length === 5) return { kind: 'pod', podUID, pluginDir, specName };
    return null;
  }
  if (parts[0] !== DefaultKubeletPluginsDirName || parts.at(-1) !== GLOBAL_MOUNT_DIR_NAME) return null;
  // plugins/kubernetes.io/csi/<driver>/<hash>/globalmount or plugins/kubernetes.io~csi/<driver>/<hash>/globalmount
  let rest: string[];
  if (parts[1] === 'kubernetes.io' && parts[2] === 'csi') rest = parts.slice(3);
  else if (parts[1] !== undefined && csiPluginDirs.includes(parts[1])) rest = parts.slice(2);
  else return null;
  if (rest.length !== 3) return null;
  const [first = '', second = ''] = rest;
  if (first === 'pv') return { kind: 'csi-global-legacy', pvName: second };
  if (!/^[0-9a-f]{64}$/.test(second)) return null;
  return { kind: 'csi-global', driver: first, handleSha256: second };
}

function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

function pluginOf(volumeName: string): string {
  // Unique names are "<plugin name>/<rest>", and plugin names have exactly one slash.
  const parts = volumeName.split('/');
  return parts.length >= 3 ? `${parts[0] ?? ''}/${parts[1] ?? ''}` : volumeName;
}

function expectsPodMount(v: AgentVolume): boolean | undefined {
  if (v.expectsPodMount !== undefined) return v.expectsPodMount;
  return (v.pluginName ?? pluginOf(v.volumeName)) === CSI_PLUGIN_NAME ? true : undefined;
}

class RowBuilder {
  readonly rows = new Map<string, TruthDiffRow>();

  get(key: string, volumeName: string | null): TruthDiffRow {
    let row = this.rows.get(key);
    if (row === undefined) {
      row = { key, volumeName, desiredPods: null, actualPods: null, inUse: false, attachedDevicePath: null, volumeAttachments: [], globalMounts: [], podMounts: [], findings: [] };
      this.rows.set(key, row);
    }
    return row;
  }
}

const SEVERITY: Readonly<Record<TruthVerdictCode, TruthSeverity>> = {
  'in-use-not-attached': 'warning',
  'attached-not-in-use': 'info',
  'va-attached-not-in-node-status': 'warning',
  'attached-without-va': 'warning',
  'va-not-attached': 'info',
  'va-error': 'error',
  'va-deleting': 'info',
  'va-unmapped': 'warning',
  'desired-not-in-use': 'info',
  'in-use-not-desired': 'info',
  'desired-not-mounted': 'warning',
  'mounted-not-desired': 'warning',
  'actual-not-mounted': 'error',
  'mounted-not-actual': 'info',
  'global-mount-without-pod-mounts': 'info',
  'mount-unmapped': 'warning',
};

function finding(code: TruthVerdictCode, explanation: string, severity: TruthSeverity = SEVERITY[code]): TruthFinding {
  return { code, severity, explanation };
}

/**
 * Compares the sources per volume. Rows are sorted by key; findings within a row follow the
 * order of {@link TruthVerdictCode}'s declaration (attach layer, then agent, then mounts).
 */
export function diffNodeTruth(input: TruthDiffInput): TruthDiff {
  const b = new RowBuilder();
  const agent = input.agent;
  const pvsByName = new Map((input.persistentVolumes ?? []).map((pv) => [pv.metadata.name, pv]));

  // Agent view.
  const agentByPodSpec = new Map<string, string>();
  const noteAgent = (v: AgentVolume): void => {
    for (const p of v.pods) agentByPodSpec.set(`${p.podUID}/${p.specName}`, v.volumeName);
  };
  const desired = new Map<string, AgentVolume>();
  const actual = new Map<string, AgentVolume>();
  for (const v of agent?.desired ?? []) {
    desired.set(v.volumeName, v);
    noteAgent(v);
    b.get(v.volumeName, v.volumeName).desiredPods = v.pods.map((p) => p.podUID).sort();
  }
  for (const v of agent?.actual ?? []) {
    actual.set(v.volumeName, v);
    noteAgent(v);
    b.get(v.volumeName, v.volumeName).actualPods = v.pods.map((p) => ({ podUID: p.podUID, mountState: p.mountState ?? 'mounted' })).sort((x, y) => (x.podUID < y.podUID ? -1 : 1));
  }

  // Node status.
  const inUse = new Set(input.nodeStatus?.volumesInUse ?? []);
  const attached = new Map((input.nodeStatus?.volumesAttached ?? []).map((a) => [a.name, a.devicePath]));
  for (const name of inUse) b.get(name, name).inUse = true;
  for (const [name, devicePath] of attached) b.get(name, name).attachedDevicePath = devicePath;

  // VolumeAttachments of this node.
  const vaVolumes = new Set<string>();
  const unresolvedVaDrivers = new Set<string>();
  const vas = (input.volumeAttachments ?? []).filter((va) => va.spec.nodeName === input.nodeName).sort((x, y) => (x.metadata.name < y.metadata.name ? -1 : 1));
  for (const va of vas) {
    const mapped = volumeAttachmentVolumeName(va, pvsByName);
    const entry: TruthVolumeAttachment = { name: va.metadata.name, attached: va.status?.attached === true };
    if (va.status?.attachError?.message !== undefined) entry.attachError = va.status.attachError.message;
    if (va.status?.detachError?.message !== undefined) entry.detachError = va.status.detachError.message;
    if (va.metadata.deletionTimestamp !== undefined) entry.deletionTimestamp = va.metadata.deletionTimestamp;
    if (mapped.volumeName === null) {
      unresolvedVaDrivers.add(va.spec.attacher);
      const row = b.get(`va:${va.metadata.name}`, null);
      row.volumeAttachments.push(entry);
      row.findings.push(finding('va-unmapped', `VolumeAttachment ${va.metadata.name} (driver ${va.spec.attacher}) cannot be matched to a volume: ${mapped.reason}.`));
      continue;
    }
    vaVolumes.add(mapped.volumeName);
    b.get(mapped.volumeName, mapped.volumeName).volumeAttachments.push(entry);
  }

  // Mounts.
  const knownHandles = new Map<string, string>();
  const noteHandle = (name: string): void => {
    const csi = parseCsiUniqueVolumeName(name);
    if (csi !== null) knownHandles.set(`${csi.driver}/${sha256Hex(csi.volumeHandle)}`, name);
  };
  for (const name of [...desired.keys(), ...actual.keys(), ...inUse, ...attached.keys(), ...vaVolumes]) noteHandle(name);
  for (const pv of pvsByName.values()) {
    const name = persistentVolumeUniqueName(pv);
    if (name !== null) noteHandle(name);
  }
  for (const m of input.mountInfo ?? []) {
    const loc = kubeletMountLocation(input.rootDir, m.mountPoint);
    if (loc === null) continue;
    if (loc.kind === 'pod') {
      const pluginName = loc.pluginDir.replaceAll('~', '/');
      let name = agentByPodSpec.get(`${loc.podUID}/${loc.specName}`) ?? null;
      if (name === null && pluginName === CSI_PLUGIN_NAME) {
        const pv = pvsByName.get(loc.specName);
        name = pv === undefined ? null : persistentVolumeUniqueName(pv);
      } else if (name === null) {
        // Plugins that neither attach nor device-mount name volumes per pod (GetUniqueVolumeNameFromSpecWithPod).
        name = `${pluginName}/${loc.podUID}-${loc.specName}`;
      }
      const row = name === null ? b.get(`mount:${m.mountPoint}`, null) : b.get(name, name);
      if (!row.podMounts.some((p) => p.mountPoint === m.mountPoint)) row.podMounts.push({ podUID: loc.podUID, specName: loc.specName, mountPoint: m.mountPoint });
      if (name === null) {
        row.findings.push(finding('mount-unmapped', `${m.mountPoint} is mounted but neither the agent nor a PersistentVolume named ${loc.specName} says which volume it is (a CSI inline volume, or its PV is gone).`));
      }
      continue;
    }
    let name: string | null;
    if (loc.kind === 'csi-global') name = knownHandles.get(`${loc.driver}/${loc.handleSha256}`) ?? null;
    else {
      const pv = pvsByName.get(loc.pvName);
      name = pv === undefined ? null : persistentVolumeUniqueName(pv);
    }
    const row = name === null ? b.get(`mount:${m.mountPoint}`, null) : b.get(name, name);
    if (!row.globalMounts.includes(m.mountPoint)) row.globalMounts.push(m.mountPoint);
    if (name === null) {
      const which = loc.kind === 'csi-global' ? `driver ${loc.driver}, a volume handle no other source mentions` : `PersistentVolume ${loc.pvName}, which was not found`;
      row.findings.push(finding('mount-unmapped', `Staging mount ${m.mountPoint} (${which}) matches no known volume; the kubelet still has to unstage it once it knows the volume.`));
    }
  }

  for (const row of b.rows.values()) {
    if (row.volumeName !== null) judge(row, row.volumeName, { input, desired, actual, vaVolumes, unresolvedVaDrivers, attached, inUse });
    row.podMounts.sort((x, y) => (x.mountPoint < y.mountPoint ? -1 : 1));
    row.globalMounts.sort();
  }
  return { nodeName: input.nodeName, rows: [...b.rows.values()].sort((x, y) => (x.key < y.key ? -1 : x.key > y.key ? 1 : 0)) };
}

interface JudgeContext {
  input: TruthDiffInput;
  desired: ReadonlyMap<string, AgentVolume>;
  actual: ReadonlyMap<string, AgentVolume>;
  vaVolumes: ReadonlySet<string>;
  unresolvedVaDrivers: ReadonlySet<string>;
  attached: ReadonlyMap<string, string>;
  inUse: ReadonlySet<string>;
}

function judge(row: TruthDiffRow, name: string, ctx: JudgeContext): void {
  const { input } = ctx;
  const f = row.findings;
  const hasNodeStatus = input.nodeStatus !== undefined;
  const isAttached = ctx.attached.has(name);
  const isInUse = ctx.inUse.has(name);
  const desired = ctx.desired.get(name);
  const actual = ctx.actual.get(name);
  const agentKnown = input.agent !== undefined;

  // Attach layer: node status against itself and the VolumeAttachments.
  if (hasNodeStatus && isInUse && !isAttached) {
    f.push(finding('in-use-not-attached', `The kubelet lists ${name} in volumesInUse, but node.status.volumesAttached does not: its mounts wait ("Volume not attached according to node status") until the attach/detach controller records the attach.`));
  }
  if (hasNodeStatus && isAttached && !isInUse) {
    f.push(finding('attached-not-in-use', `node.status.volumesAttached lists ${name}, but the kubelet does not report it in use: no pod here needs it any more, so the attach/detach controller may detach it.`));
  }
  const vas = row.volumeAttachments;
  if (input.volumeAttachments !== undefined) {
    for (const va of vas) {
      if (va.attachError !== undefined) f.push(finding('va-error', `VolumeAttachment ${va.name} reports an attach error: ${va.attachError}`));
      if (va.detachError !== undefined) f.push(finding('va-error', `VolumeAttachment ${va.name} reports a detach error: ${va.detachError}`));
      if (va.deletionTimestamp !== undefined) {
        f.push(finding('va-deleting', `VolumeAttachment ${va.name} is being deleted since ${va.deletionTimestamp}: detach in progress; if it stays, its finalizer waits for a ControllerUnpublish that keeps failing.`, va.attached ? 'warning' : 'info'));
        continue;
      }
      if (va.attached && hasNodeStatus && !isAttached) {
        f.push(finding('va-attached-not-in-node-status', `VolumeAttachment ${va.name} says attached, but node.status.volumesAttached lacks ${name}: the attach/detach controller has not recorded the attach (or marked it detached), so the kubelet will not mount it.`));
      }
      if (!va.attached && va.attachError === undefined) {
        f.push(finding('va-not-attached', `VolumeAttachment ${va.name} is not attached yet: external-attacher has not finished ControllerPublishVolume${isInUse ? '; pods on this node wait for it' : ''}.`, isInUse ? 'warning' : 'info'));
      }
    }
    const driver = parseCsiUniqueVolumeName(name)?.driver;
    if (isAttached && driver !== undefined && !ctx.vaVolumes.has(name) && !ctx.unresolvedVaDrivers.has(driver)) {
      f.push(finding('attached-without-va', `node.status.volumesAttached lists ${name}, but no VolumeAttachment for this node exists: the node status is stale, or the VolumeAttachment was deleted behind the controller's back.`));
    }
  }

  // Agent against node status.
  if (agentKnown && hasNodeStatus) {
    if (desired !== undefined && desired.attachable === true && !isInUse) {
      f.push(finding('desired-not-in-use', `${name} is desired but not yet in volumesInUse: mounts wait with "Volume has not been added to the list of VolumesInUse in the node's volume status" until the next node status update (about 10 s).`));
    }
    if (isInUse && desired === undefined && actual === undefined) {
      f.push(finding('in-use-not-desired', `volumesInUse lists ${name}, but it is neither desired nor mounted: a stale entry the kubelet drops at its next node status update.`));
    }
  }

  // Mounts against the agent.
  if (input.mountInfo !== undefined) {
    const mountedPods = new Set(row.podMounts.map((p) => p.podUID));
    if (agentKnown) {
      const wantPods = new Set(desired?.pods.map((p) => p.podUID) ?? []);
      for (const p of row.podMounts) {
        if (!wantPods.has(p.podUID)) f.push(finding('mounted-not-desired', `${p.mountPoint} is mounted, but pod ${p.podUID} no longer wants ${name}: the kubelet still has to unmount it (TearDown / NodeUnpublishVolume).`));
        else if (!(actual?.pods.some((a) => a.podUID === p.podUID) ?? false)) {
          f.push(finding('mounted-not-actual', `${p.mountPoint} is mounted, but the actual state does not record it for pod ${p.podUID} yet (reconstruction pending, or the mount finished after the snapshot).`));
        }
      }
      if (desired === undefined && actual === undefined) {
        for (const g of row.globalMounts) f.push(finding('mounted-not-desired', `${g} is still staged, but no pod wants ${name}: the kubelet still has to unstage it (UnmountDevice / NodeUnstageVolume).`));
      }
      if (desired !== undefined && expectsPodMount(desired) === true) {
        for (const p of desired.pods) {
          if (!mountedPods.has(p.podUID)) f.push(finding('desired-not-mounted', `Pod ${p.podUID} wants ${name} (as ${p.specName}), but nothing is mounted for it: the kubelet still has to mount it.`));
        }
      }
      if (actual !== undefined && expectsPodMount(actual) === true) {
        for (const p of actual.pods) {
          if ((p.mountState ?? 'mounted') === 'mounted' && !mountedPods.has(p.podUID)) {
            f.push(finding('actual-not-mounted', `The actual state says ${name} is mounted for pod ${p.podUID}, but the mount table has no such mount: it was unmounted behind the kubelet's back (by hand, or lost in a restart).`));
          }
        }
      }
    }
    if (row.globalMounts.length > 0 && row.podMounts.length === 0 && (desired === undefined || desired.pods.length === 0) && !agentKnown) {
      f.push(finding('global-mount-without-pod-mounts', `${name} is staged at ${row.globalMounts.join(', ')} but no pod mount uses it: the kubelet still has to unstage it, unless a pod is about to mount it.`));
    }
  }
}
