/**
 * The node diagnostics of the snapshot and API: mount health (`mountHealth[]`), and the
 * unmount-blocker report (`unmountBlockers[]`, `GET /api/v1/volumes/blockers`). Contract only;
 * the checks run in the agent (agent/node/mount-health/, agent/node/unmount-blockers/).
 */
import { z } from 'zod';

const EpochMs = z.number().int().nonnegative();

/**
 * The state of one mount as its last check found it:
 * - `healthy`: statfs and stat answered;
 * - `not-connected`: ENOTCONN, "transport endpoint is not connected" (a FUSE daemon that died);
 * - `io-error`: EIO;
 * - `stale`: ESTALE (an NFS file handle the server no longer knows);
 * - `hung`: no answer within the check's timeout (a stopped FUSE daemon, an unreachable NFS server);
 * - `error`: any other errno (the text says which, e.g. ENOENT for a mount point that is gone).
 */
export const MountHealthStateSchema = z.enum(['healthy', 'not-connected', 'io-error', 'stale', 'hung', 'error']);
/** The state of one mount. */
export type MountHealthState = z.infer<typeof MountHealthStateSchema>;

/** One checked mount: a pod's volume path or a volume's staging (device mount) path. */
export const MountHealthSchema = z.object({
  /** The checked path (the pod's volume directory, or the staging path). */
  path: z.string(),
  /** The pod whose volume path this is; `null` for a staging path (shared by the volume's pods). */
  podUid: z.string().nullable(),
  /** The unique volume name. */
  volume: z.string(),
  kind: z.enum(['pod', 'staging']),
  state: MountHealthStateSchema,
  /** The error as the system call reported it (e.g. `ENOTCONN: transport endpoint is not connected, statfs '…'`); `null` when healthy. */
  error: z.string().nullable(),
  /** When the last check answered (or timed out). */
  checkedAt: EpochMs,
  /** Since when the mount is in `state` (the first check that found it so). */
  since: EpochMs,
});
/** One checked mount. */
export type MountHealth = z.infer<typeof MountHealthSchema>;

/** The key of a mount health entry: its path. */
export function mountHealthKey(entry: Pick<MountHealth, 'path'>): string {
  return entry.path;
}

/** The container a process belongs to, as its cgroup path tells. */
export const HolderContainerSchema = z.object({
  /** The pod UID from a `kubepods…pod<uid>` cgroup; `null` when the cgroup names none. */
  podUid: z.string().nullable(),
  /** The container ID (64 hex digits); `null` for the pod's own cgroup or an unknown layout. */
  containerId: z.string().nullable(),
  /** `containerd` (`cri-containerd-…`), `cri-o` (`crio-…`), `docker` (`docker-…`); `null` when the path does not say. */
  runtime: z.enum(['containerd', 'cri-o', 'docker']).nullable(),
});
/** The container a process belongs to. */
export type HolderContainer = z.infer<typeof HolderContainerSchema>;

/** One reason why a path cannot be unmounted. */
export const HolderSchema = z.object({
  pid: z.number().int().positive(),
  /** The command line (arguments joined by spaces); the `comm` name when it cannot be read. */
  command: z.string(),
  /**
   * `fd`: an open file; `cwd`: its working directory; `root`: its root directory (chroot, a
   * container); `mmap`: a mapped file; `mount-namespace`: the volume is still mounted in the
   * mount namespace of this process (one process per namespace is named).
   */
  kind: z.enum(['fd', 'cwd', 'root', 'mmap', 'mount-namespace']),
  /** The held path as that process sees it (for `mount-namespace`, the mount point in that namespace). */
  path: z.string(),
  /** The container and pod, when its cgroup tells; `null` for a host process. */
  container: HolderContainerSchema.nullable(),
});
/** One reason why a path cannot be unmounted. */
export type Holder = z.infer<typeof HolderSchema>;

/** What holds one path: the answer of `GET /api/v1/volumes/blockers` and of `unmountBlockers[].report`. */
export const BlockersReportSchema = z.object({
  /** The path searched for (the pod's volume path, or the staging path without a pod). */
  path: z.string(),
  /** Every holder found, by pid then kind; at most `maxHolders` (see `truncated`). */
  holders: z.array(HolderSchema),
  /** More holders exist than listed. */
  truncated: z.boolean(),
  /**
   * Why the search is incomplete (the time budget ran out, a process did not answer within its
   * deadline, `/proc` could not be read); `null` when every process was looked at.
   */
  incomplete: z.string().nullable(),
  /** Processes looked at. */
  processesScanned: z.number().int().nonnegative(),
  /** When the search ran. */
  checkedAt: EpochMs,
  durationMs: z.number().int().nonnegative(),
});
/** What holds one path. */
export type BlockersReport = z.infer<typeof BlockersReportSchema>;

/** The blocker report of an unmount that failed because the target is busy, in the snapshot. */
export const UnmountBlockersSchema = z.object({
  /** `volume_unmount` (a pod's TearDown) or `unmount_device` (the staging path). */
  operationName: z.string(),
  /** The unique volume name. */
  volume: z.string(),
  /** The pod of a TearDown; `null` for `unmount_device`. */
  podUid: z.string().nullable(),
  report: BlockersReportSchema,
});
/** The blocker report of an unmount that failed because the target is busy. */
export type UnmountBlockers = z.infer<typeof UnmountBlockersSchema>;

/** The key of an unmount blocker entry: `<operationName>|<volume>|<podUid or "">`. */
export function unmountBlockersKey(entry: Pick<UnmountBlockers, 'operationName' | 'volume' | 'podUid'>): string {
  return `${entry.operationName}|${entry.volume}|${entry.podUid ?? ''}`;
}

/** Query of `GET /api/v1/volumes/blockers`. */
export const BlockersQuerySchema = z.object({
  /** The unique volume name. */
  volume: z.string().min(1),
  /** The pod whose volume path to search; absent: the volume's staging path. */
  podUid: z.string().min(1).optional(),
});
/** Query of `GET /api/v1/volumes/blockers`. */
export type BlockersQuery = z.infer<typeof BlockersQuerySchema>;

/** The answer of `GET /api/v1/volumes/blockers`. */
export const BlockersResponseSchema = BlockersReportSchema.extend({
  volume: z.string(),
  podUid: z.string().nullable(),
});
/** The answer of `GET /api/v1/volumes/blockers`. */
export type BlockersResponse = z.infer<typeof BlockersResponseSchema>;

/** Who a holder is, in words: `pid 4242 (sleep 600) of container abc123… of pod <uid>`. */
export function describeHolder(holder: Holder): string {
  const who = `pid ${String(holder.pid)} (${holder.command})`;
  const c = holder.container;
  if (c === null) return `${who} on the host`;
  const container = c.containerId === null ? '' : ` in container ${c.containerId.slice(0, 12)}`;
  return `${who}${container}${c.podUid === null ? '' : ` of pod ${c.podUid}`}`;
}

const kindWords: Record<Holder['kind'], string> = {
  fd: 'has a file open in it',
  cwd: 'has its working directory in it',
  root: 'has its root directory in it',
  mmap: 'has a file of it mapped into memory',
  'mount-namespace': 'still has it mounted in its mount namespace',
};

/**
 * A plain-words verdict on a blocker report, for the volume page: what keeps the path busy and
 * what to do.
 */
export function blockersVerdict(report: BlockersReport): string {
  const incomplete = report.incomplete === null ? '' : ` The search is incomplete: ${report.incomplete}`;
  if (report.holders.length === 0) {
    return `No process holds ${report.path}, and no other mount namespace has it mounted.${incomplete === '' ? ' An unmount should succeed now; if it still fails as busy, a kernel user (a loop device, an NFS export, a bind mount below it) holds it.' : incomplete}`;
  }
  const pids = new Set(report.holders.map((h) => h.pid));
  const first = report.holders[0];
  const lead = first === undefined ? '' : ` ${describeHolder(first)} ${kindWords[first.kind]}.`;
  const more = pids.size > 1 ? ` ${String(pids.size - 1)} more process(es) hold it too${report.truncated ? ' (list cut)' : ''}.` : '';
  return `${String(pids.size)} process(es) keep ${report.path} busy.${lead}${more} The unmount can succeed once they exit or let go of it (stop the container, or end the process).${incomplete}`;
}
