/**
 * The CSI state machine of csi-loop: one method per RPC, each taking the decoded request and
 * returning the response or throwing a CsiError. Bookkeeping lives in the StateStore and is
 * saved after every change; the host work is delegated to a VolumeBackend.
 *
 * Contract (see README.md for the full table):
 * - every call is idempotent: repeating a successful call succeeds without changing anything;
 * - volumes are made by CreateVolume (dynamic provisioning: the volume id is the CO's name, so a
 *   repeated CreateVolume finds it again, across restarts too), by the control API, or on demand
 *   by the first ControllerPublishVolume of an unknown id (static PVs of the tests); with
 *   `strict` (the `--strict` flag) that last way is off and ControllerPublishVolume answers
 *   NOT_FOUND for an unknown volume or a node other than this one, as the spec asks;
 * - DeleteVolume of an unknown volume is OK; of a volume still controller-published, staged or
 *   published it is FAILED_PRECONDITION (the spec's "volume in use": deleting would pull the
 *   image out from under a loop device or mount);
 * - a volume id the driver has never seen gives NOT_FOUND where the spec lists it (stage,
 *   unstage, publish, unpublish, stats, expand, get, validate); ControllerUnpublishVolume of an
 *   unknown volume is OK (it is certainly not published: the spec's "safely regarded as
 *   ControllerUnpublished" case);
 * - out-of-order calls give FAILED_PRECONDITION: stage before the volume is attached to this
 *   node, publish before stage (or at another staging path), unstage while publishes remain,
 *   ControllerUnpublishVolume for this node while the volume is still staged here (a deliberate
 *   choice: the spec makes ordering the CO's duty; refusing keeps the loop device from being
 *   pulled out from under a mounted filesystem and makes ordering bugs visible);
 * - CSI ephemeral volumes (NodePublishVolume with volume_context
 *   `csi.storage.k8s.io/ephemeral: "true"`, as kubelet sends for inline `csi:` pod volumes of a
 *   CSIDriver with the Ephemeral lifecycle mode) are created by that publish, made available at
 *   the target without controller publish or stage, and deleted by their NodeUnpublishVolume; a
 *   repeated unpublish of a deleted one is OK. They are refused by ControllerPublishVolume and
 *   NodeStageVolume (FAILED_PRECONDITION), and a persistent volume id is refused as ephemeral;
 * - several nodes on one state dir (README.md, Several nodes): the disk is attached (one loop
 *   device per host) by ControllerPublishVolume to any node served on the state dir
 *   (StateStore.nodes()) and detached when the last of them is unpublished; a volume is staged
 *   on one node at a time (`staged.nodeId`); stage, publish, stats and expansion on another node
 *   see it as not staged here;
 * - per-volume serialisation and the state transaction (StateStore.exclusive) are done by the
 *   caller (grpc-server.ts, control-server.ts), not here.
 */
import { promises as fs, type StatsFs } from 'node:fs';
import type { VolumeBackend } from './backend.ts';
import { firstUnsupportedReason } from './capabilities.ts';
import { allocationFor, fitsRange, MIN_VOLUME_BYTES } from './capacity-range.ts';
import {
  alreadyExists,
  Code,
  CsiError,
  failedPrecondition,
  invalidArgument,
  notFound,
} from './csi-error.ts';
import type {
  AccessModeName,
  AccessType,
  ControllerGetVolumeRequest,
  ControllerGetVolumeResponse,
  ControllerExpandVolumeRequest,
  ControllerExpandVolumeResponse,
  ControllerPublishVolumeRequest,
  ControllerUnpublishVolumeRequest,
  CreateVolumeRequest,
  CreateVolumeResponse,
  DeleteVolumeRequest,
  GetCapacityRequest,
  GetCapacityResponse,
  ListVolumesRequest,
  ListVolumesResponse,
  NodeExpandVolumeRequest,
  NodeGetVolumeStatsRequest,
  NodeGetVolumeStatsResponse,
  NodePublishVolumeRequest,
  NodeStageVolumeRequest,
  NodeUnpublishVolumeRequest,
  NodeUnstageVolumeRequest,
  StringMap,
  ValidateVolumeCapabilitiesRequest,
  ValidateVolumeCapabilitiesResponse,
  Volume,
  VolumeCapability,
  VolumeStatus,
} from './csi-types.ts';
import { isInvalidQuantityError, parseQuantity } from './quantity.ts';
import type { StateStore, VolumeRecord } from './state-store.ts';

export const DEFAULT_CAPACITY_BYTES = 64 * 2 ** 20;
/** The volume_context key kubelet sets to "true" on the NodePublishVolume of an inline ephemeral volume. */
export const EPHEMERAL_CONTEXT_KEY = 'csi.storage.k8s.io/ephemeral';
export const VENDOR_VERSION = '0.1.0';

/** Access modes that allow only one node (CSI ControllerPublishVolume "published to another node"). */
const SINGLE_NODE_MODES: ReadonlySet<string> = new Set<AccessModeName>([
  'UNKNOWN',
  'SINGLE_NODE_WRITER',
  'SINGLE_NODE_READER_ONLY',
  'SINGLE_NODE_SINGLE_WRITER',
  'SINGLE_NODE_MULTI_WRITER',
]);

export interface CsiServiceOptions {
  driverName: string;
  nodeId: string;
  store: StateStore;
  backend: VolumeBackend;
  /** The state dir: its filesystem holds the disks (GetCapacity, the largest volume). */
  stateDir: string;
  /** No volume or node comes into being by ControllerPublishVolume (see the contract above). */
  strict?: boolean;
}

export class CsiLoopService {
  readonly driverName: string;
  readonly nodeId: string;
  private readonly store: StateStore;
  private readonly backend: VolumeBackend;
  private readonly stateDir: string;
  private readonly strict: boolean;
  /**
   * The VOLUME_CONDITION NodeGetVolumeStats reports per volume id, set through the control API
   * (`POST /volume-condition`) to make a volume abnormal in tests; healthy when absent. Memory
   * only: a restarted driver reports every volume healthy again.
   */
  private readonly conditions = new Map<string, { abnormal: boolean; message: string }>();

  constructor(options: CsiServiceOptions) {
    this.driverName = options.driverName;
    this.nodeId = options.nodeId;
    this.store = options.store;
    this.backend = options.backend;
    this.stateDir = options.stateDir;
    this.strict = options.strict ?? false;
  }

  // ---- Identity -------------------------------------------------------------------------------

  getPluginInfo(): object {
    return { name: this.driverName, vendor_version: VENDOR_VERSION, manifest: { mode: this.backend.mode } };
  }

  getPluginCapabilities(): object {
    return {
      capabilities: [
        { service: { type: 'CONTROLLER_SERVICE' } },
        { volume_expansion: { type: 'ONLINE' } },
      ],
    };
  }

  probe(): object {
    return { ready: { value: true } };
  }

  // ---- Controller -----------------------------------------------------------------------------

  controllerGetCapabilities(): object {
    const types = [
      'CREATE_DELETE_VOLUME',
      'PUBLISH_UNPUBLISH_VOLUME',
      'LIST_VOLUMES',
      'GET_CAPACITY',
      'EXPAND_VOLUME',
      'LIST_VOLUMES_PUBLISHED_NODES',
      'GET_VOLUME',
    ];
    return { capabilities: types.map((type) => ({ rpc: { type } })) };
  }

  /**
   * Dynamic provisioning. The volume id is the request's name, so a repeated call (the
   * provisioner retrying, or after a driver restart) finds the volume: OK when it is compatible
   * (its size fits the capacity range, same parameters), ALREADY_EXISTS otherwise. The size
   * follows capacity-range.ts (default 64Mi); the parameters are kept and returned as the
   * volume context. No content source (no snapshots, no clones), no mutable parameters, no
   * topology (accessibility requirements are ignored: the driver reports none).
   */
  async createVolume(req: CreateVolumeRequest): Promise<CreateVolumeResponse> {
    requireField(req.name, 'Volume name');
    if (req.volume_capabilities.length === 0) {
      throw invalidArgument('Volume capabilities missing in request');
    }
    const unsupported = firstUnsupportedReason(req.volume_capabilities);
    if (unsupported !== null) {
      throw invalidArgument(unsupported);
    }
    if (req.volume_content_source !== null) {
      throw invalidArgument('volume_content_source is not supported: csi-loop offers neither snapshots nor clones');
    }
    if (Object.keys(req.mutable_parameters).length > 0) {
      throw invalidArgument('mutable_parameters are not supported: csi-loop does not offer MODIFY_VOLUME');
    }
    const existing = this.store.get(req.name);
    if (existing !== undefined) {
      if (existing.ephemeral) {
        throw alreadyExists(`volume ${req.name} exists as an ephemeral volume`);
      }
      if (!fitsRange(existing.capacityBytes, req.capacity_range)) {
        throw alreadyExists(
          `volume ${req.name} exists with ${existing.capacityBytes} bytes, outside capacity_range required_bytes=${req.capacity_range?.required_bytes ?? 0} limit_bytes=${req.capacity_range?.limit_bytes ?? 0}`,
        );
      }
      if (!sameMap(existing.parameters, req.parameters)) {
        throw alreadyExists(`volume ${req.name} exists with other parameters`);
      }
      return { volume: toVolume(existing) };
    }
    const capacityBytes = allocationFor(req.capacity_range, {
      defaultBytes: DEFAULT_CAPACITY_BYTES,
      maximumBytes: await this.maximumVolumeBytes(),
    });
    const record = await this.addVolume(req.name, { capacityBytes, volumeContext: { ...req.parameters }, parameters: { ...req.parameters } });
    return { volume: toVolume(record) };
  }

  /**
   * Deletes the volume and its disk. Unknown id: OK (already deleted). Still controller-published
   * (to any node), staged or published, or an ephemeral volume (its NodeUnpublishVolume deletes
   * it): FAILED_PRECONDITION.
   */
  async deleteVolume(req: DeleteVolumeRequest): Promise<object> {
    requireField(req.volume_id, 'Volume ID');
    const record = this.store.get(req.volume_id);
    if (record === undefined) {
      return {};
    }
    if (record.ephemeral) {
      throw failedPrecondition(`volume ${req.volume_id} is an ephemeral volume; its NodeUnpublishVolume deletes it`);
    }
    const uses = [
      ...Object.keys(record.publishedNodes).map((node) => `controller-published to node ${node}`),
      ...(record.staged === null ? [] : [`staged at ${record.staged.path}`]),
      ...Object.keys(record.publishedTargets).map((target) => `published at ${target}`),
    ];
    if (uses.length > 0) {
      throw failedPrecondition(`volume ${req.volume_id} is in use: ${uses.join(', ')}`);
    }
    await this.backend.detach(record);
    await this.backend.deleteDisk(record);
    this.store.remove(record.volumeId);
    await this.store.save();
    return {};
  }

  /**
   * Confirms the capabilities when every one is supported (capabilities.ts) and the volume
   * context / parameters, if given, are the volume's; otherwise answers unconfirmed with the
   * reason in `message` (not an error, per spec).
   */
  validateVolumeCapabilities(req: ValidateVolumeCapabilitiesRequest): ValidateVolumeCapabilitiesResponse {
    requireField(req.volume_id, 'Volume ID');
    if (req.volume_capabilities.length === 0) {
      throw invalidArgument('Volume capabilities missing in request');
    }
    const record = this.requireVolume(req.volume_id);
    let reason = firstUnsupportedReason(req.volume_capabilities);
    if (reason === null && Object.keys(req.volume_context).length > 0 && !sameMap(req.volume_context, record.volumeContext)) {
      reason = `volume_context differs from the context of volume ${req.volume_id}`;
    }
    if (reason === null && Object.keys(req.parameters).length > 0 && !sameMap(req.parameters, record.parameters)) {
      reason = `parameters differ from the parameters volume ${req.volume_id} was created with`;
    }
    if (Object.keys(req.mutable_parameters).length > 0) {
      reason ??= 'mutable_parameters are not supported';
    }
    if (reason !== null) {
      return { confirmed: null, message: reason };
    }
    return {
      confirmed: {
        volume_context: req.volume_context,
        volume_capabilities: req.volume_capabilities,
        parameters: req.parameters,
        mutable_parameters: {},
      },
      message: '',
    };
  }

  /**
   * The free space of the filesystem that holds the disks. Disks are sparse, so this is what can
   * still be written, not a reservation; CreateVolume does not subtract volumes from it. Zero
   * for capabilities the driver does not support (spec: the capacity for volumes that satisfy them).
   */
  async getCapacity(req: GetCapacityRequest): Promise<GetCapacityResponse> {
    const stats = await fs.statfs(this.stateDir);
    const supported = firstUnsupportedReason(req.volume_capabilities) === null;
    return {
      available_capacity: supported ? stats.bavail * stats.bsize : 0,
      maximum_volume_size: { value: stats.blocks * stats.bsize },
      minimum_volume_size: { value: MIN_VOLUME_BYTES },
    };
  }

  /**
   * Grows the disk (never the filesystem: node_expansion_required is true unless the capability
   * says block access, and NodeExpandVolume then grows the filesystem). A size the volume already
   * has is OK with its current size; a limit below its current size is OUT_OF_RANGE (no shrinking).
   */
  async controllerExpandVolume(req: ControllerExpandVolumeRequest): Promise<ControllerExpandVolumeResponse> {
    requireField(req.volume_id, 'Volume ID');
    if (req.capacity_range === null) {
      throw invalidArgument('Capacity range not provided');
    }
    if (req.volume_capability !== null) {
      const unsupported = firstUnsupportedReason([req.volume_capability]);
      if (unsupported !== null) {
        throw invalidArgument(unsupported);
      }
    }
    const record = this.requireVolume(req.volume_id);
    if (record.ephemeral) {
      throw failedPrecondition(`volume ${req.volume_id} is an ephemeral volume; it cannot be expanded`);
    }
    const limit = req.capacity_range.limit_bytes;
    if (limit > 0 && record.capacityBytes > limit) {
      throw new CsiError(Code.OUT_OF_RANGE, `volume ${req.volume_id} has ${record.capacityBytes} bytes, more than limit_bytes=${limit}; volumes never shrink`);
    }
    const bytes = allocationFor(req.capacity_range, { defaultBytes: record.capacityBytes, maximumBytes: await this.maximumVolumeBytes() });
    const nodeExpansionRequired = req.volume_capability?.access_type !== 'block';
    if (bytes > record.capacityBytes) {
      await this.backend.growDisk(record, bytes);
      record.capacityBytes = bytes;
      record.nodeExpansionPending ||= nodeExpansionRequired;
      await this.save(record);
    }
    return { capacity_bytes: record.capacityBytes, node_expansion_required: nodeExpansionRequired };
  }

  /**
   * Creates the volume on first use (capacity from volume_context "capacity"/"capacity_bytes",
   * default 64Mi), then attaches it when `node_id` is a node served on the state dir (this one or
   * another csi-loop process's, README.md Several nodes). Other node ids are recorded
   * only (they let tests model a volume attached elsewhere) and get an empty publish context.
   */
  async controllerPublishVolume(req: ControllerPublishVolumeRequest): Promise<object> {
    requireField(req.volume_id, 'Volume ID');
    requireField(req.node_id, 'Node ID');
    const capability = requireCapability(req.volume_capability);
    const accessMode = capability.access_mode?.mode ?? 'UNKNOWN';
    const record = this.strict ? this.requireVolume(req.volume_id) : await this.getOrCreate(req.volume_id, req.volume_context);
    if (record.ephemeral) {
      throw failedPrecondition(`volume ${req.volume_id} is an ephemeral volume; it is never controller-published`);
    }
    if (this.strict && !this.servesNode(req.node_id)) {
      throw notFound(`node ${req.node_id} not found: with --strict csi-loop knows only node(s) ${this.servedNodes().join(', ')}`);
    }

    const existing = record.publishedNodes[req.node_id];
    if (existing !== undefined && existing.readonly !== req.readonly) {
      throw alreadyExists(
        `volume ${req.volume_id} is already published to node ${req.node_id} with readonly=${existing.readonly}`,
      );
    }
    if (existing === undefined) {
      const others = Object.entries(record.publishedNodes).filter(([node]) => node !== req.node_id);
      const exclusive = SINGLE_NODE_MODES.has(accessMode) || others.some(([, info]) => SINGLE_NODE_MODES.has(info.accessMode));
      if (others.length > 0 && exclusive) {
        throw failedPrecondition(
          `volume ${req.volume_id} is already published to node ${others.map(([node]) => node).join(', ')} (access mode ${accessMode})`,
        );
      }
    }

    let publishContext: StringMap = {};
    if (this.servesNode(req.node_id)) {
      const device = await this.backend.attach(record);
      record.devicePath = device;
      publishContext = { devicePath: device };
    }
    record.publishedNodes[req.node_id] = { readonly: req.readonly, accessMode };
    await this.save(record);
    return { publish_context: publishContext };
  }

  async controllerUnpublishVolume(req: ControllerUnpublishVolumeRequest): Promise<object> {
    requireField(req.volume_id, 'Volume ID');
    const record = this.store.get(req.volume_id);
    if (record === undefined || record.ephemeral) {
      // Unknown, or ephemeral (never controller-published): certainly not published.
      return {};
    }
    const nodes = req.node_id === '' ? Object.keys(record.publishedNodes) : [req.node_id];
    const stagedOn = this.stagedNode(record);
    if (stagedOn !== null && nodes.includes(stagedOn)) {
      throw failedPrecondition(
        `volume ${req.volume_id} is still staged at ${record.staged?.path ?? ''} on node ${stagedOn}; call NodeUnstageVolume first`,
      );
    }
    const wasAttached = Object.keys(record.publishedNodes).some((node) => this.servesNode(node));
    for (const node of nodes) {
      record.publishedNodes = omit(record.publishedNodes, node);
    }
    // One attachment per host serves every node of the state dir: detach with the last of them.
    if (wasAttached && !Object.keys(record.publishedNodes).some((node) => this.servesNode(node))) {
      await this.backend.detach(record);
      record.devicePath = null;
    }
    await this.save(record);
    return {};
  }

  async listVolumes(req: ListVolumesRequest): Promise<ListVolumesResponse> {
    if (req.max_entries < 0) {
      throw invalidArgument(`max_entries must not be negative, got ${req.max_entries}`);
    }
    const all = this.store.list();
    let start = 0;
    if (req.starting_token !== '') {
      start = /^[0-9]+$/.test(req.starting_token) ? Number(req.starting_token) : -1;
      if (start < 0 || start > all.length) {
        throw new CsiError(Code.ABORTED, `invalid starting_token ${JSON.stringify(req.starting_token)}`);
      }
    }
    const end = req.max_entries > 0 ? Math.min(all.length, start + req.max_entries) : all.length;
    const entries = [];
    for (const record of all.slice(start, end)) {
      entries.push({ volume: toVolume(record), status: await this.volumeStatus(record) });
    }
    return { entries, next_token: end < all.length ? String(end) : '' };
  }

  async controllerGetVolume(req: ControllerGetVolumeRequest): Promise<ControllerGetVolumeResponse> {
    requireField(req.volume_id, 'Volume ID');
    const record = this.requireVolume(req.volume_id);
    return { volume: toVolume(record), status: await this.volumeStatus(record) };
  }

  // ---- Node -----------------------------------------------------------------------------------

  nodeGetCapabilities(): object {
    const types = ['STAGE_UNSTAGE_VOLUME', 'EXPAND_VOLUME', 'GET_VOLUME_STATS', 'VOLUME_CONDITION'];
    return { capabilities: types.map((type) => ({ rpc: { type } })) };
  }

  nodeGetInfo(): object {
    return { node_id: this.nodeId, max_volumes_per_node: 0 };
  }

  async nodeStageVolume(req: NodeStageVolumeRequest): Promise<object> {
    requireField(req.volume_id, 'Volume ID');
    requireField(req.staging_target_path, 'Staging target path');
    const capability = requireCapability(req.volume_capability);
    const accessType = accessTypeOf(capability);
    const record = this.requireVolume(req.volume_id);

    if (record.publishedNodes[this.nodeId] === undefined || (await this.backend.attachedDevice(record)) === null) {
      throw failedPrecondition(
        `volume ${req.volume_id} is not attached to node ${this.nodeId}; call ControllerPublishVolume first`,
      );
    }
    const stagedOn = this.stagedNode(record);
    if (stagedOn !== null && stagedOn !== this.nodeId) {
      throw failedPrecondition(`volume ${req.volume_id} is already staged on node ${stagedOn}; csi-loop stages a volume on one node at a time`);
    }
    if (record.staged !== null) {
      if (record.staged.path !== req.staging_target_path) {
        throw failedPrecondition(`volume ${req.volume_id} is already staged at ${record.staged.path}`);
      }
      if (record.staged.accessType !== accessType) {
        throw alreadyExists(
          `volume ${req.volume_id} is already staged at ${record.staged.path} with access type ${record.staged.accessType}`,
        );
      }
      if (await this.backend.isStaged(record, record.staged.path, accessType)) {
        return {};
      }
    }
    await this.backend.stage(record, req.staging_target_path, accessType, capability.mount?.mount_flags ?? []);
    record.staged = { path: req.staging_target_path, accessType, nodeId: this.nodeId };
    record.formatted ||= accessType === 'mount' && this.backend.mode === 'privileged';
    await this.save(record);
    return {};
  }

  async nodeUnstageVolume(req: NodeUnstageVolumeRequest): Promise<object> {
    requireField(req.volume_id, 'Volume ID');
    requireField(req.staging_target_path, 'Staging target path');
    const record = this.requireVolume(req.volume_id);
    if (record.staged === null || record.staged.path !== req.staging_target_path || this.stagedNode(record) !== this.nodeId) {
      return {};
    }
    const targets = Object.keys(record.publishedTargets);
    if (targets.length > 0) {
      throw failedPrecondition(
        `volume ${req.volume_id} is still published at ${targets.length} target path(s): ${targets.join(', ')}`,
      );
    }
    await this.backend.unstage(record, record.staged.path, record.staged.accessType);
    record.staged = null;
    await this.save(record);
    return {};
  }

  async nodePublishVolume(req: NodePublishVolumeRequest): Promise<object> {
    requireField(req.volume_id, 'Volume ID');
    requireField(req.target_path, 'Target path');
    const capability = requireCapability(req.volume_capability);
    if (req.volume_context[EPHEMERAL_CONTEXT_KEY] === 'true') {
      return this.publishEphemeral(req, capability);
    }
    if (req.staging_target_path === '') {
      throw failedPrecondition('Staging target path not set: NodeStageVolume must succeed before NodePublishVolume');
    }
    const accessType = accessTypeOf(capability);
    const accessMode = capability.access_mode?.mode ?? 'UNKNOWN';
    const record = this.requireVolume(req.volume_id);
    const staged = this.stagedNode(record) === this.nodeId ? record.staged : null;
    if (staged?.path !== req.staging_target_path) {
      throw failedPrecondition(`volume ${req.volume_id} is not staged at ${req.staging_target_path} on node ${this.nodeId}`);
    }
    if (staged.accessType !== accessType) {
      throw failedPrecondition(`volume ${req.volume_id} is staged with access type ${staged.accessType}, not ${accessType}`);
    }

    const existing = record.publishedTargets[req.target_path];
    if (existing !== undefined) {
      if (existing.readonly !== req.readonly || existing.accessType !== accessType || existing.accessMode !== accessMode) {
        throw alreadyExists(`volume ${req.volume_id} is already published at ${req.target_path} with other arguments`);
      }
      if (await this.backend.isPublished(record, staged.path, req.target_path)) {
        return {};
      }
    } else if (accessMode === 'SINGLE_NODE_SINGLE_WRITER' && Object.keys(record.publishedTargets).length > 0) {
      throw failedPrecondition(`volume ${req.volume_id} (SINGLE_NODE_SINGLE_WRITER) is already published at another target path`);
    }
    await this.backend.publish(record, staged.path, req.target_path, req.readonly, accessType);
    record.publishedTargets[req.target_path] = { readonly: req.readonly, accessType, accessMode };
    await this.save(record);
    return {};
  }

  async nodeUnpublishVolume(req: NodeUnpublishVolumeRequest): Promise<object> {
    requireField(req.volume_id, 'Volume ID');
    requireField(req.target_path, 'Target path');
    const known = this.store.get(req.volume_id);
    if (known === undefined && this.store.removedEphemeralTarget(req.volume_id) === req.target_path) {
      // A repeated unpublish of an ephemeral volume that the first one already deleted.
      return {};
    }
    const record = this.requireVolume(req.volume_id);
    if (record.ephemeral) {
      return this.unpublishEphemeral(record, req.target_path);
    }
    if (record.publishedTargets[req.target_path] === undefined) {
      return {};
    }
    await this.backend.unpublish(record, req.target_path);
    record.publishedTargets = omit(record.publishedTargets, req.target_path);
    await this.save(record);
    return {};
  }

  async nodeGetVolumeStats(req: NodeGetVolumeStatsRequest): Promise<NodeGetVolumeStatsResponse> {
    requireField(req.volume_id, 'Volume ID');
    requireField(req.volume_path, 'Volume path');
    const record = this.requireVolume(req.volume_id);
    // A volume staged on another node has its targets there (ephemeral volumes are never staged).
    const stagedOn = this.stagedNode(record);
    const here = stagedOn === null || stagedOn === this.nodeId;
    const known = here && (record.staged?.path === req.volume_path || record.publishedTargets[req.volume_path] !== undefined);
    if (!known) {
      throw notFound(`volume ${req.volume_id} is not available at ${req.volume_path}`);
    }
    let stats: StatsFs;
    try {
      stats = await fs.statfs(req.volume_path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
        throw notFound(`volume path ${req.volume_path} does not exist`);
      }
      throw err;
    }
    const bytes = (blocks: number): number => blocks * stats.bsize;
    return {
      usage: [
        {
          unit: 'BYTES',
          total: bytes(stats.blocks),
          available: bytes(stats.bavail),
          used: bytes(stats.blocks - stats.bfree),
        },
        { unit: 'INODES', total: stats.files, available: stats.ffree, used: stats.files - stats.ffree },
      ],
      volume_condition: this.conditions.get(req.volume_id) ?? { abnormal: false, message: 'volume is healthy' },
    };
  }

  /** Sets the condition NodeGetVolumeStats reports for `volumeId`; null makes it healthy again. */
  setVolumeCondition(volumeId: string, condition: { abnormal: boolean; message: string } | null): void {
    if (condition === null) this.conditions.delete(volumeId);
    else this.conditions.set(volumeId, { ...condition });
  }

  async nodeExpandVolume(req: NodeExpandVolumeRequest): Promise<object> {
    requireField(req.volume_id, 'Volume ID');
    requireField(req.volume_path, 'Volume path');
    const record = this.requireVolume(req.volume_id);
    if (this.stagedNode(record) !== this.nodeId) {
      throw failedPrecondition(`volume ${req.volume_id} is not staged on node ${this.nodeId}`);
    }
    const required = req.capacity_range?.required_bytes ?? 0;
    const limit = req.capacity_range?.limit_bytes ?? 0;
    if (required < 0 || limit < 0 || (limit > 0 && required > limit)) {
      throw new CsiError(Code.OUT_OF_RANGE, `invalid capacity range required=${required} limit=${limit}`);
    }
    // The filesystem grows to the disk: to `required` when that is more than the disk has (node
    // expansion without ControllerExpandVolume), or to what ControllerExpandVolume gave the disk.
    if (required > record.capacityBytes || record.nodeExpansionPending) {
      const bytes = Math.max(required, record.capacityBytes);
      await this.backend.expand(record, bytes);
      record.capacityBytes = bytes;
      record.nodeExpansionPending = false;
      await this.save(record);
    }
    return { capacity_bytes: record.capacityBytes };
  }

  /**
   * NodePublishVolume of an ephemeral volume: creates it on first use (capacity from the volume
   * context, default 64Mi) and makes it available at `target_path` without stage. Mount access
   * only, no staging path (kubelet sends none for inline volumes); one target per volume (it
   * belongs to one pod). A first publish that fails deletes the volume again, so a failed pod
   * start leaves nothing the CO would have to unpublish.
   */
  private async publishEphemeral(req: NodePublishVolumeRequest, capability: VolumeCapability): Promise<object> {
    const accessType = accessTypeOf(capability);
    const accessMode = capability.access_mode?.mode ?? 'UNKNOWN';
    if (accessType !== 'mount') {
      throw invalidArgument(`ephemeral volume ${req.volume_id}: only mount access is supported, not ${accessType}`);
    }
    if (req.staging_target_path !== '') {
      throw invalidArgument(`ephemeral volume ${req.volume_id}: staging_target_path must be empty (ephemeral volumes are not staged)`);
    }
    const known = this.store.get(req.volume_id);
    if (known !== undefined && !known.ephemeral) {
      throw failedPrecondition(`volume ${req.volume_id} exists as a persistent volume; it cannot be published as an ephemeral volume`);
    }
    const record = known ?? (await this.getOrCreate(req.volume_id, req.volume_context, true));

    const existing = record.publishedTargets[req.target_path];
    if (existing !== undefined) {
      if (existing.readonly !== req.readonly || existing.accessType !== accessType || existing.accessMode !== accessMode) {
        throw alreadyExists(`volume ${req.volume_id} is already published at ${req.target_path} with other arguments`);
      }
      if (await this.backend.isEphemeralPublished(record, req.target_path)) {
        return {};
      }
    } else {
      const others = Object.keys(record.publishedTargets);
      if (others.length > 0) {
        throw failedPrecondition(`ephemeral volume ${req.volume_id} is already published at ${others.join(', ')}; it belongs to one pod`);
      }
    }
    try {
      record.devicePath = await this.backend.publishEphemeral(record, req.target_path, req.readonly, capability.mount?.mount_flags ?? []);
    } catch (err) {
      if (known === undefined) {
        await this.deleteEphemeral(record, req.target_path);
      }
      throw err;
    }
    record.formatted ||= this.backend.mode === 'privileged';
    record.publishedTargets[req.target_path] = { readonly: req.readonly, accessType, accessMode };
    await this.save(record);
    return {};
  }

  /**
   * NodeUnpublishVolume of an ephemeral volume: undoes the publish at `target_path` and deletes
   * the volume (its lifetime is the pod's). A target the volume is not published at while it is
   * published elsewhere is OK and changes nothing; with no target recorded at all (a failed
   * publish, or `POST /detach`) the volume is detached and deleted without touching the path.
   */
  private async unpublishEphemeral(record: VolumeRecord, targetPath: string): Promise<object> {
    const targets = Object.keys(record.publishedTargets);
    if (targets.length > 0 && !targets.includes(targetPath)) {
      return {};
    }
    if (targets.includes(targetPath)) {
      await this.backend.unpublishEphemeral(record, targetPath);
      record.publishedTargets = {};
      record.devicePath = null;
      await this.save(record);
    }
    await this.deleteEphemeral(record, targetPath);
    return {};
  }

  private async deleteEphemeral(record: VolumeRecord, targetPath: string): Promise<void> {
    await this.backend.detach(record);
    await this.backend.deleteDisk(record);
    this.store.removeEphemeral(record.volumeId, targetPath);
    await this.store.save();
  }

  // ---- Used by the control API ----------------------------------------------------------------

  /** Creates a volume without publishing it, or returns the known one (control API `POST /volumes`). */
  async ensureVolume(volumeId: string, volumeContext: StringMap): Promise<VolumeRecord> {
    return structuredClone(await this.getOrCreate(volumeId, volumeContext));
  }

  /**
   * Simulates a terminated node: lazily unmounts every mount of the volume, detaches the disk,
   * and forgets that the volume is published/staged on this node. Returns the detached device.
   */
  async yank(volumeId: string): Promise<string | null> {
    const record = this.requireVolume(volumeId);
    const device = record.devicePath;
    await this.backend.yank(record);
    record.devicePath = null;
    record.staged = null;
    record.publishedTargets = {};
    record.publishedNodes = omit(record.publishedNodes, this.nodeId);
    await this.save(record);
    return device;
  }

  // ---- Helpers --------------------------------------------------------------------------------

  /** Whether `nodeId` is served by a csi-loop process on this state dir (this one included). */
  private servesNode(nodeId: string): boolean {
    return nodeId === this.nodeId || this.store.nodes().includes(nodeId);
  }

  private servedNodes(): string[] {
    return [...new Set([this.nodeId, ...this.store.nodes()])].sort();
  }

  /** The node the volume is staged on (a state file without `staged.nodeId`: this node), or null. */
  private stagedNode(record: VolumeRecord): string | null {
    return record.staged === null ? null : (record.staged.nodeId ?? this.nodeId);
  }

  private requireVolume(volumeId: string): VolumeRecord {
    const record = this.store.get(volumeId);
    if (record === undefined) {
      throw notFound(`volume ${volumeId} does not exist`);
    }
    return record;
  }

  private async getOrCreate(volumeId: string, volumeContext: StringMap, ephemeral = false): Promise<VolumeRecord> {
    const known = this.store.get(volumeId);
    if (known !== undefined) {
      return known;
    }
    return this.addVolume(volumeId, { capacityBytes: capacityFromContext(volumeContext), volumeContext: { ...volumeContext }, ephemeral });
  }

  /** Creates the disk and the record of a new volume, and saves the state. */
  private async addVolume(
    volumeId: string,
    o: { capacityBytes: number; volumeContext: StringMap; parameters?: StringMap; ephemeral?: boolean },
  ): Promise<VolumeRecord> {
    const record: VolumeRecord = {
      volumeId,
      capacityBytes: o.capacityBytes,
      diskPath: this.backend.diskPathFor(volumeId),
      volumeContext: o.volumeContext,
      publishedNodes: {},
      devicePath: null,
      formatted: false,
      staged: null,
      publishedTargets: {},
      createdAt: new Date().toISOString(),
      ephemeral: o.ephemeral ?? false,
      parameters: o.parameters ?? {},
      nodeExpansionPending: false,
    };
    await this.backend.ensureDisk(record);
    this.store.forgetRemovedEphemeral(volumeId);
    this.store.put(record);
    await this.store.save();
    return record;
  }

  /** Published node ids; a node served on this state dir only while the attachment is verified on the host. */
  private async volumeStatus(record: VolumeRecord): Promise<VolumeStatus> {
    const nodes = [];
    for (const node of Object.keys(record.publishedNodes).sort()) {
      if (!this.servesNode(node) || (await this.backend.attachedDevice(record)) !== null) {
        nodes.push(node);
      }
    }
    return { published_node_ids: nodes, volume_condition: null };
  }

  private async save(record: VolumeRecord): Promise<void> {
    this.store.put(record);
    await this.store.save();
  }

  /** The largest volume: the size of the filesystem that holds the disks. */
  private async maximumVolumeBytes(): Promise<number> {
    const stats = await fs.statfs(this.stateDir);
    return stats.blocks * stats.bsize;
  }
}

function sameMap(a: StringMap, b: StringMap): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => b[k] === a[k]);
}

function omit<V>(map: Record<string, V>, key: string): Record<string, V> {
  return Object.fromEntries(Object.entries(map).filter(([k]) => k !== key));
}

function toVolume(record: VolumeRecord): Volume {
  return {
    capacity_bytes: record.capacityBytes,
    volume_id: record.volumeId,
    volume_context: record.volumeContext,
    accessible_topology: [],
  };
}

function requireField(value: string, what: string): void {
  if (value === '') {
    throw invalidArgument(`${what} missing in request`);
  }
}

function requireCapability(capability: VolumeCapability | null): VolumeCapability {
  if (capability === null) {
    throw invalidArgument('Volume capability missing in request');
  }
  const fsType = capability.mount?.fs_type ?? '';
  if (capability.access_type === 'mount' && fsType !== '' && fsType !== 'ext4') {
    throw failedPrecondition(`fs_type ${fsType} is not supported (only ext4)`);
  }
  return capability;
}

function accessTypeOf(capability: VolumeCapability): AccessType {
  if (capability.access_type === undefined) {
    throw invalidArgument('Volume capability has neither mount nor block access type');
  }
  return capability.access_type;
}

/** Capacity of a new volume: `capacity` (quantity) or `capacity_bytes` in the volume context. */
export function capacityFromContext(volumeContext: StringMap): number {
  const text = volumeContext.capacity ?? volumeContext.capacity_bytes;
  if (text === undefined || text === '') {
    return DEFAULT_CAPACITY_BYTES;
  }
  try {
    return parseQuantity(text);
  } catch (err) {
    if (isInvalidQuantityError(err)) {
      throw invalidArgument(`volume_context capacity: ${err.message}`);
    }
    throw err;
  }
}
