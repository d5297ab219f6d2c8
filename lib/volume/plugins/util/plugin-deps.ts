/**
 * What the in-tree plugins are built from. Plugins take their dependencies in the constructor
 * (nothing global): the agent passes the mounter chosen by `detectMounter` and an object getter
 * backed by manifests or informers; tests pass a test mounter, a fake clock and fixtures.
 */
import type { Clock } from '../../../clock/clock.ts';
import type { Mounter } from '../../../mount-utils/mounter.ts';
import type { ResourceList } from '../../k8s-types.ts';
import type { VolumeObjectGetter } from '../../object-getter.ts';
import type { TokenManager } from '../../token/token-manager.ts';

export interface VolumePluginDeps {
  /** Every mount, unmount and mount-table read of the plugins goes through it. */
  mounter: Mounter;
  /**
   * ConfigMaps, Secrets and current pods. Required by configmap, secret and projected volumes
   * (their SetUp fails without it); the downward API falls back to the pod it was given.
   */
  objects?: VolumeObjectGetter;
  /**
   * Bound service account tokens for projected `serviceAccountToken` sources (the kubelet's
   * token manager over the TokenRequest API). Absent without an API server: the projected
   * plugin then writes a placeholder.
   */
  serviceAccountTokens?: Pick<TokenManager, 'getServiceAccountToken' | 'deleteServiceAccountToken'>;
  /**
   * The kubelet root dir, below which every removal must stay. Default: the parent of the
   * host's pods dir (`<root>/pods`).
   */
  rootDir?: string;
  /** Names the atomic writer's timestamped data dirs. Default: the process clock. */
  clock?: Clock;
  /**
   * Node allocatable resources for downward API `resourceFieldRef` limits that a container does
   * not set (the kubelet substitutes node allocatable). Default: this machine's CPU count and
   * total memory; resources missing here count as 0.
   */
  nodeAllocatable?: ResourceList;
  /**
   * The node's allocatable memory in bytes (its Node's `status.allocatable.memory`), read at
   * each SetUp; null while unknown. The size the kubelet gives a memory-backed emptyDir that
   * nothing smaller bounds (util/memory-size.ts). Absent: unknown.
   */
  nodeAllocatableMemoryBytes?: () => number | null;
}
