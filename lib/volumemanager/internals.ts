/**
 * The parts behind a {@link VolumeManager}, for the engine's own tests and benchmarks: they set
 * up states directly and drive passes by hand, as the kubelet's tests do from inside the
 * package. Not part of the public surface (index.ts), and the agent may not import it (lint).
 */
import type { NestedPendingOperations } from '../operationexecutor/nested-pending-operations.ts';
import type { OperationExecutor } from '../operationexecutor/operation-executor.ts';
import type { VolumePluginMgr } from '../volume/plugins.ts';
import type { ActualStateOfWorld } from './cache/actual-state-of-world.ts';
import type { DesiredStateOfWorld } from './cache/desired-state-of-world.ts';
import type { DesiredStateOfWorldPopulator } from './populator/desired-state-of-world-populator.ts';
import type { Reconciler } from './reconciler/reconciler.ts';
import type { VolumeManager } from './volume-manager.ts';

/** The parts a {@link VolumeManager} wires together. */
export interface VolumeManagerInternals {
  readonly pluginMgr: VolumePluginMgr;
  readonly dsw: DesiredStateOfWorld;
  readonly asw: ActualStateOfWorld;
  readonly pendingOperations: NestedPendingOperations;
  readonly operationExecutor: OperationExecutor;
  readonly populator: DesiredStateOfWorldPopulator;
  readonly reconciler: Reconciler;
}

const internalsByManager = new WeakMap<VolumeManager, VolumeManagerInternals>();

/** Called once by the VolumeManager constructor. */
export function registerVolumeManagerInternals(vm: VolumeManager, parts: VolumeManagerInternals): void {
  internalsByManager.set(vm, parts);
}

/** The parts of `vm`. */
export function volumeManagerInternals(vm: VolumeManager): VolumeManagerInternals {
  const parts = internalsByManager.get(vm);
  // Unreachable: every VolumeManager registers its parts in its constructor.
  if (parts === undefined) throw new Error('volumeManagerInternals: not a VolumeManager');
  return parts;
}
