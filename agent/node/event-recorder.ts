/**
 * The agent's EventRecorder: where the kubelet would post an Event to the API server, the agent
 * keeps the latest events in a bounded ring (the snapshot's `recentEvents`, oldest first) and
 * logs each one. With a file, the ring survives restarts (agent/persistent-ring.ts: loaded at
 * start, written atomically, bounded). Listeners hear about every recorded event (the runtime's onChange). A message is
 * kept and logged cut to the API's event note limit (`truncateMessage`, with a visible marker).
 */
import { RecentEventSchema, type RecentEvent } from '../../lib/api/snapshot.ts';
import type { Clock } from '../../lib/clock/clock.ts';
import { EVENT_NOTE_LENGTH_LIMIT, truncateMessage } from '../../lib/truncate-message.ts';
import type { EventRecorder, EventType, InvolvedObject } from '../../lib/volume/events.ts';
import type { Logger } from '../../lib/volume/logger.ts';
import { PersistentRing } from '../persistent-ring.ts';

/**
 * The longest reason, pod or volume name an event keeps (characters). Kubernetes names are far
 * shorter (253 for a unique volume name's parts); only a malformed manifest reaches it.
 */
export const EVENT_NAME_LENGTH_LIMIT = 1024;

/** Ring size: enough for a screenful of recent trouble; old events fall off the front. */
const defaultMaxRecentEvents = 100;

/** The file of the persisted events below the agent's state dir. */
export const EVENTS_FILE_NAME = 'events.jsonl';

export class RingEventRecorder implements EventRecorder {
  private readonly ring: PersistentRing<typeof RecentEventSchema>;
  private readonly listeners = new Set<() => void>();

  constructor(
    private readonly clock: Clock,
    private readonly log: Logger,
    capacity = defaultMaxRecentEvents,
    /** Where the events persist (`<state dir>/events.jsonl`); null: memory only. */
    file: string | null = null,
  ) {
    this.ring = new PersistentRing({ file, schema: RecentEventSchema, capacity, clock, logger: log });
  }

  event(object: InvolvedObject, type: EventType, reason: string, fullMessage: string, volume?: string): void {
    const message = truncateMessage(fullMessage, EVENT_NOTE_LENGTH_LIMIT);
    // Names come from manifests (a manifest source validates no lengths): kept bounded too.
    const name = (text: string): string => truncateMessage(text, EVENT_NAME_LENGTH_LIMIT);
    const entry: RecentEvent = {
      time: Math.floor(this.clock.now()),
      type,
      reason: name(reason),
      podUid: object.kind === 'Pod' ? (object.uid === undefined ? null : name(object.uid)) : null,
      message,
      ...(volume === undefined ? {} : { volume: name(volume) }),
      // The pod's name stays with the event: the dashboard names pods that are gone by it.
      ...(object.kind === 'Pod' && object.namespace !== undefined ? { podNamespace: name(object.namespace) } : {}),
      ...(object.kind === 'Pod' ? { podName: name(object.name) } : {}),
    };
    this.ring.append(entry);
    const fields = {
      event: { type, reason },
      object: { kind: object.kind, ...(object.namespace !== undefined ? { namespace: object.namespace } : {}), name: object.name, ...(object.uid !== undefined ? { uid: object.uid } : {}) },
    };
    if (type === 'Warning') this.log.warn(message, fields);
    else this.log.info(message, fields);
    for (const listener of this.listeners) listener();
  }

  /** The recorded events, oldest first (a copy). */
  recent(): RecentEvent[] {
    return [...this.ring.records()];
  }

  /** Writes events not yet on disk (agent stop). */
  flush(): Promise<void> {
    return this.ring.flush();
  }

  onEvent(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
