/**
 * The nested pending operations table (kubelet `pkg/volume/util/nestedpendingoperations`,
 * v1.30 behaviour with the three-part key volume/pod/node).
 *
 * It decides whether a volume operation may start: at most one operation runs per matching key,
 * so operations on different pods (or nodes) of one volume can run in parallel while an
 * operation keyed with an empty pod (or node) name excludes every operation on that volume. A
 * failed operation leaves its entry behind with an exponential backoff that refuses a new
 * attempt with the same operation name until the backoff window has passed.
 */

import type { Clock } from '../clock/clock.ts';
import {
  EmptyNodeName,
  EmptyUniquePodName,
  EmptyUniqueVolumeName,
  type NodeName,
  type UniquePodName,
  type UniqueVolumeName,
} from '../volume/types.ts';
import { goQuote } from '../volume/util/go-format.ts';
import { ExponentialBackoff } from './exponential-backoff.ts';
import { errorMessage } from '../volume/errors.ts';
import type { Logger } from '../volume/logger.ts';

/** The key of a pending operation. Empty pod or node names are wildcards; see {@link NestedPendingOperations}. */
export interface OperationKey {
  volumeName: UniqueVolumeName;
  podName: UniquePodName;
  nodeName: NodeName;
}

/** `%+v` of the key as Go prints it: `{volumeName:kubernetes.io/csi/x^y podName: nodeName:}` */
export function formatOperationKey(key: OperationKey): string {
  return `{volumeName:${key.volumeName} podName:${key.podName} nodeName:${key.nodeName}}`;
}

/**
 * What an operation reports when it finishes. Both undefined means success. `eventErr` is the
 * short message for the event recorder; `detailedErr` is the detailed message that drives the
 * backoff and the logs.
 */
export interface OperationResult {
  eventErr?: Error;
  detailedErr?: Error;
}

/** `types.GeneratedOperations`: an operation ready to be handed to {@link NestedPendingOperations.run}. */
export interface GeneratedOperations {
  /** The operation name (`volume_mount`, `unmount_device`, …); backoff applies per name. */
  operationName: string;
  /** The operation itself. It must not throw; a throw (or rejection) is treated as `detailedErr` = the thrown error. */
  operationFunc: () => Promise<OperationResult>;
  /** Always called after the operation (like a Go defer), also on success with `undefined`. */
  eventRecorderFunc?: (eventErr: Error | undefined) => void;
  /** The metrics hook; always called after the operation with the detailed error (`undefined` on success). */
  completeFunc?: (detailedErr: Error | undefined) => void;
}

/**
 * Thrown by {@link NestedPendingOperations.run} when an operation with a matching key is
 * already executing.
 */
export class AlreadyExistsError extends Error {
  override readonly name = 'AlreadyExistsError';
  /** The key of the refused operation. */
  readonly operationKey: OperationKey;

  constructor(operationKey: OperationKey) {
    super(
      `Failed to create operation with name ${formatOperationKey(operationKey)}. ` +
        'An operation with that name is already executing.',
    );
    this.operationKey = { ...operationKey };
  }
}

/**
 * `IsAlreadyExists`: true when a new operation could not start because an operation with a
 * matching key is already executing. Callers treat it as an expected, quiet state.
 */
export function isAlreadyExists(err: unknown): err is AlreadyExistsError {
  return err instanceof AlreadyExistsError;
}

/** A read-only copy of one table entry, for snapshots; never a live reference. */
export interface PendingOperationView {
  key: OperationKey;
  operationName: string;
  /** True while the operation runs. */
  pending: boolean;
  /** Consecutive failures recorded on this entry since it was created or its backoff was reset. */
  failures: number;
  /** When the running attempt was started (epoch ms); `null` when not pending. */
  startedAt: number | null;
  /** The detailed error text of the last failure; `null` if none. */
  lastError: string | null;
  /** When the last failure happened (epoch ms); `null` if none. */
  lastErrorTime: number | null;
  /** The current backoff window in ms (0 before the first failure). */
  durationBeforeRetry: number;
  /** The end of the backoff window (epoch ms); a retry is permitted strictly after it. `null` if no failure. */
  retryAt: number | null;
}

/** Options of {@link NestedPendingOperations}. */
export interface NestedPendingOperationsOptions {
  clock: Clock;
  /** When false, a failed operation's entry is deleted like a successful one (no backoff). */
  exponentialBackOffOnError: boolean;
  logger?: Pick<Logger, 'error'> & Partial<Pick<Logger, 'info'>>;
  /** Called after any entry is added, started, completed or cleared. */
  onChange?: () => void;
}

interface Operation {
  key: OperationKey;
  operationName: string;
  pending: boolean;
  expBackoff: ExponentialBackoff;
  failures: number;
  startedAt: number | null;
  /** Position in the operations array (kept in step with upstream's swap-delete order). */
  pos: number;
}

/** The result of {@link NestedPendingOperations.clearBackoff}. */
export type ClearBackoffResult = 'cleared' | 'not-found' | 'running';

/** The read-only copy of an entry. */
function toView(op: Operation): PendingOperationView {
  const backoff = op.expBackoff;
  const failed = backoff.lastError !== null;
  return {
    key: { ...op.key },
    operationName: op.operationName,
    pending: op.pending,
    failures: op.failures,
    startedAt: op.pending ? op.startedAt : null,
    lastError: backoff.lastError?.message ?? null,
    lastErrorTime: failed ? backoff.lastErrorTime : null,
    durationBeforeRetry: backoff.durationBeforeRetry,
    retryAt: backoff.retryAt(),
  };
}

/** A thrown Error is used as is; anything else is wrapped the way Go reports a recovered panic. */
function toError(thrown: unknown): Error {
  if (thrown instanceof Error) return thrown;
  return new Error(`recovered from panic ${goQuote(String(thrown))}`);
}

function describeThrown(thrown: unknown): string {
  return errorMessage(thrown);
}

/**
 * Runs volume operations so that at most one operation executes per matching key.
 *
 * Two keys match when the volume names are equal and non-empty (an empty volume name never
 * matches anything, so such operations always run), the pod names are equal or either is
 * empty, and the node names are equal or either is empty.
 *
 * Entries stay in the table while their operation runs ("pending") and, when exponential
 * backoff on error is enabled, after a failure (not pending, with a backoff). A success deletes
 * the entry, which resets its backoff.
 */
export class NestedPendingOperations {
  private readonly clock: Clock;
  private readonly exponentialBackOffOnError: boolean;
  private readonly logger: (Pick<Logger, 'error'> & Partial<Pick<Logger, 'info'>>) | undefined;
  private readonly onChange: (() => void) | undefined;
  private operations: Operation[] = [];
  /** Entries by volume name, so lookups cost O(entries of that volume), not O(all entries). */
  private readonly byVolume = new Map<UniqueVolumeName, Operation[]>();
  private waiters: (() => void)[] = [];

  constructor(opts: NestedPendingOperationsOptions) {
    this.clock = opts.clock;
    this.exponentialBackOffOnError = opts.exponentialBackOffOnError;
    this.logger = opts.logger;
    this.onChange = opts.onChange;
  }

  /**
   * Starts `ops.operationFunc` for the key (volumeName, podName, nodeName).
   *
   * Throws synchronously, starting nothing:
   * - {@link AlreadyExistsError} when a matching entry is pending;
   * - {@link ExponentialBackoffError} when the matching entry failed with the same operation
   *   name and its backoff window has not expired (retries are allowed strictly after
   *   `lastErrorTime + durationBeforeRetry`).
   *
   * A matching entry in backoff for a different operation name is taken over: its name, backoff
   * and failure count are reset. An expired backoff is kept, so the next failure doubles it.
   * Otherwise the entry is recorded as pending (reusing the matching entry, rekeyed to this key,
   * or appending a new one) and `operationFunc` starts on the next microtask, never
   * synchronously inside `run`, so a reconciler pass is never re-entered.
   *
   * After the operation, `eventRecorderFunc(eventErr)` and `completeFunc(detailedErr)` are
   * called, then the entry is completed: deleted on success (or on any error when backoff is
   * disabled), else its backoff is updated and it stops being pending.
   */
  run(volumeName: UniqueVolumeName, podName: UniquePodName, nodeName: NodeName, ops: GeneratedOperations): void {
    const key: OperationKey = { volumeName, podName, nodeName };
    const previous = this.findOperation(key);
    let entry: Operation;
    if (previous !== undefined) {
      if (previous.pending) throw new AlreadyExistsError(key);
      const backOffErr = previous.expBackoff.safeToRetry(formatOperationKey(key), this.clock.now());
      if (backOffErr !== null) {
        if (previous.operationName === ops.operationName) throw backOffErr;
        // A different operation on the same key: reset the operation name and the backoff.
        previous.operationName = ops.operationName;
        previous.expBackoff = new ExponentialBackoff();
        previous.failures = 0;
      }
      previous.pending = true;
      previous.key = key;
      entry = previous;
    } else {
      entry = {
        key,
        operationName: ops.operationName,
        pending: true,
        expBackoff: new ExponentialBackoff(),
        failures: 0,
        startedAt: null,
        pos: this.operations.length,
      };
      this.operations.push(entry);
      const sameVolume = this.byVolume.get(volumeName);
      if (sameVolume === undefined) this.byVolume.set(volumeName, [entry]);
      else sameVolume.push(entry);
    }
    entry.startedAt = this.clock.now();
    this.notifyChange();
    queueMicrotask(() => {
      void this.execute(entry, key, ops);
    });
  }

  /** True when an entry matching the key is pending (its operation is running). */
  isOperationPending(volumeName: UniqueVolumeName, podName: UniquePodName, nodeName: NodeName): boolean {
    return this.findOperation({ volumeName, podName, nodeName })?.pending === true;
  }

  /**
   * True when {@link run} with this key and operation name would start: false if a matching
   * entry is pending, or is in backoff for the same operation name.
   */
  isOperationSafeToRetry(
    volumeName: UniqueVolumeName,
    podName: UniquePodName,
    nodeName: NodeName,
    operationName: string,
  ): boolean {
    const key: OperationKey = { volumeName, podName, nodeName };
    const previous = this.findOperation(key);
    if (previous === undefined) return true;
    if (previous.pending) return false;
    const backOffErr = previous.expBackoff.safeToRetry(formatOperationKey(key), this.clock.now());
    return backOffErr === null || previous.operationName !== operationName;
  }

  /**
   * Resolves when no entry is pending (immediately if none is). Entries left in backoff do not
   * hold it up. Meant for tests.
   */
  wait(): Promise<void> {
    if (!this.anyPending()) return Promise.resolve();
    return new Promise((resolve) => {
      this.waiters.push(resolve);
    });
  }

  /** Copies of all entries, in table order. */
  list(): PendingOperationView[] {
    return this.operations.map(toView);
  }

  /**
   * A copy of the entry that {@link run} and {@link clearBackoff} would act on for this key
   * (the same matching rules: a pending match wins, then an exact match, then the first match),
   * or undefined when none matches. Lets callers name the entry before acting on it.
   */
  getOperation(volumeName: UniqueVolumeName, podName: UniquePodName, nodeName: NodeName): PendingOperationView | undefined {
    const op = this.findOperation({ volumeName, podName, nodeName });
    return op === undefined ? undefined : toView(op);
  }

  /**
   * Retry-now: finds the entry matching the key with the same rules as {@link run} (a pending
   * match wins). Returns `'running'` if that entry is pending, `'not-found'` if nothing matches
   * (always for an empty volume name), else deletes the entry, exactly as a success would, and
   * returns `'cleared'`: the next attempt starts at once and a new failure backs off 500 ms.
   */
  clearBackoff(volumeName: UniqueVolumeName, podName: UniquePodName, nodeName: NodeName): ClearBackoffResult {
    const previous = this.findOperation({ volumeName, podName, nodeName });
    if (previous === undefined) return 'not-found';
    if (previous.pending) return 'running';
    this.deleteOperation(previous);
    this.notifyChange();
    return 'cleared';
  }

  /** The number of entries (pending or in backoff). */
  size(): number {
    return this.operations.length;
  }

  /**
   * `isOperationExists`: the matching entry, preferring a pending one; among non-pending
   * matches an exact match (same pod and node) wins, else the first match.
   */
  private findOperation(key: OperationKey): Operation | undefined {
    if (key.volumeName === EmptyUniqueVolumeName) return undefined;
    const candidates = this.byVolume.get(key.volumeName);
    if (candidates === undefined) return undefined;
    let found: Operation | undefined;
    let exact = false;
    for (const op of candidates) {
      const podNameMatch =
        op.key.podName === EmptyUniquePodName || key.podName === EmptyUniquePodName || op.key.podName === key.podName;
      const nodeNameMatch =
        op.key.nodeName === EmptyNodeName || key.nodeName === EmptyNodeName || op.key.nodeName === key.nodeName;
      if (!podNameMatch || !nodeNameMatch) continue;
      if (op.pending) return op;
      if (op.key.podName === key.podName && op.key.nodeName === key.nodeName) {
        found = op;
        exact = true;
      } else if (!exact && (found === undefined || op.pos < found.pos)) {
        // The first match in the (upstream-ordered) operations array.
        found = op;
      }
    }
    return found;
  }

  private async execute(entry: Operation, key: OperationKey, ops: GeneratedOperations): Promise<void> {
    let eventErr: Error | undefined;
    let detailedErr: Error | undefined;
    try {
      const result = await ops.operationFunc();
      eventErr = result.eventErr;
      detailedErr = result.detailedErr;
    } catch (thrown) {
      detailedErr = toError(thrown);
    }
    this.callHook('eventRecorderFunc', key, () => ops.eventRecorderFunc?.(eventErr));
    this.callHook('completeFunc', key, () => ops.completeFunc?.(detailedErr));
    this.operationComplete(entry, key, detailedErr);
  }

  private callHook(hook: string, key: OperationKey, fn: () => void): void {
    try {
      fn();
    } catch (thrown) {
      this.logger?.error(`${hook} of operation ${formatOperationKey(key)} failed: ${describeThrown(thrown)}`);
    }
  }

  /**
   * Upstream looks the entry up by exact key; while an entry is pending its key cannot change
   * and no other entry carries the same non-empty key, so the entry itself is used. Entries
   * with an empty volume name can never be matched again, so they are dropped even on failure
   * (upstream keeps them forever).
   */
  private operationComplete(entry: Operation, key: OperationKey, err: Error | undefined): void {
    try {
      if (err === undefined || !this.exponentialBackOffOnError) {
        this.deleteOperation(entry);
        if (err !== undefined) {
          this.logger?.error(`operation ${formatOperationKey(key)} failed with: ${err.message}`);
        }
        return;
      }
      if (this.operations[entry.pos] !== entry) {
        this.logger?.error(
          `Operation ${formatOperationKey(key)} completed. error: ${err.message}. ` +
            'exponentialBackOffOnError is enabled, but failed to get operation to update.',
        );
        return;
      }
      entry.expBackoff.update(err, this.clock.now());
      entry.pending = false;
      entry.failures += 1;
      entry.startedAt = null;
      this.logger?.error(entry.expBackoff.generateNoRetriesPermittedMsg(formatOperationKey(key)));
      if (entry.key.volumeName === EmptyUniqueVolumeName) this.deleteOperation(entry);
    } finally {
      this.notifyChange();
      this.releaseWaiters();
    }
  }

  /** Deletes an entry the way upstream does: the last entry takes its place. */
  private deleteOperation(entry: Operation): void {
    const index = entry.pos;
    if (this.operations[index] !== entry) return;
    const last = this.operations.pop();
    if (last !== undefined && last !== entry) {
      this.operations[index] = last;
      last.pos = index;
    }
    const sameVolume = this.byVolume.get(entry.key.volumeName);
    if (sameVolume !== undefined) {
      const i = sameVolume.indexOf(entry);
      if (i >= 0) sameVolume.splice(i, 1);
      if (sameVolume.length === 0) this.byVolume.delete(entry.key.volumeName);
    }
  }

  private anyPending(): boolean {
    return this.operations.some((op) => op.pending);
  }

  private releaseWaiters(): void {
    if (this.waiters.length === 0 || this.anyPending()) return;
    const waiters = this.waiters;
    this.waiters = [];
    for (const resolve of waiters) resolve();
  }

  private notifyChange(): void {
    if (this.onChange === undefined) return;
    try {
      this.onChange();
    } catch (thrown) {
      this.logger?.error(`onChange listener failed: ${describeThrown(thrown)}`);
    }
  }
}
