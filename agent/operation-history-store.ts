/**
 * The engine's operation history (lib/operationexecutor/operation-history.ts) across agent
 * restarts: `<root>/volumescope/operation-history.jsonl`, one API item (`OperationHistory`,
 * lib/api/snapshot.ts) per line, oldest key first, through {@link PersistentRing} (bounded,
 * atomic, a corrupt line skipped with an error naming the file). The engine starts from what it
 * loads, so a mount that failed before the restart goes on counting its attempts after it.
 */
import { OperationHistorySchema, type OperationHistory } from '../lib/api/snapshot.ts';
import type { Clock } from '../lib/clock/clock.ts';
import type { Logger } from '../lib/volume/logger.ts';
import { DEFAULT_HISTORY_ENTRIES, type OperationHistoryView, type OperationRecord } from '../lib/volumemanager/index.ts';
import { PersistentRing } from './persistent-ring.ts';
import { operationHistoryFromView } from './server/snapshot-items.ts';

/** The file of the persisted operation history below the agent's state dir. */
export const OPERATION_HISTORY_FILE_NAME = 'operation-history.jsonl';

/** The engine's view of a persisted item (the API's nulls are the engine's empty keys). */
export function operationHistoryViewFromItem(item: OperationHistory): OperationHistoryView {
  return {
    operationName: item.operationName,
    volume: item.volume,
    pod: item.podUid ?? '',
    node: item.nodeName ?? '',
    firstFailureAt: item.firstFailureAt,
    attemptsTotal: item.attemptsTotal,
    attempts: item.attempts,
    succeededAt: item.succeededAt,
  };
}

/** What the store reads the history from and hears its changes through (the VolumeManager). */
export interface OperationHistorySource {
  getOperationHistory(): OperationHistoryView[];
  onOperationRecord(listener: (record: OperationRecord) => void): () => void;
}

export class OperationHistoryStore {
  private readonly ring: PersistentRing<typeof OperationHistorySchema>;

  constructor(opts: { file: string | null; clock: Clock; logger: Logger; capacity?: number }) {
    this.ring = new PersistentRing({ file: opts.file, schema: OperationHistorySchema, capacity: opts.capacity ?? DEFAULT_HISTORY_ENTRIES, clock: opts.clock, logger: opts.logger });
  }

  /** What was kept from before the restart, for `VolumeManager`'s `operationHistory.initial`. */
  loaded(): OperationHistoryView[] {
    return this.ring.records().map(operationHistoryViewFromItem);
  }

  /**
   * Saves the source's history after every finished operation (the only thing that changes it),
   * built when the coalesced write runs, so an operation storm does not rebuild it per operation;
   * returns the unsubscribe function.
   */
  follow(source: OperationHistorySource): () => void {
    return source.onOperationRecord(() => {
      this.take(source);
    });
  }

  /**
   * Takes the source's history now and writes it (agent stop: operations that finished during
   * the grace period, after the listeners were removed, are saved too).
   */
  flush(source: OperationHistorySource): Promise<void> {
    this.take(source);
    return this.ring.flush();
  }

  /** Marks the file stale; the items are built from the source once, when written. */
  private take(source: OperationHistorySource): void {
    this.ring.replaceLazily(() => source.getOperationHistory().map(operationHistoryFromView));
  }
}
