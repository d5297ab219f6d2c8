/**
 * RestartingInformer: one `ListWatch` of `@kubernetes/client-node` (list, then watch from the
 * list's resourceVersion), kept running until {@link RestartingInformer.stop}.
 *
 * What client-node 2.0.1 does by itself, and what this adds:
 * - 410 Gone (a watch `ERROR` event with code 410, or an HTTP 410 answer) and clean closes by
 *   the server are handled by `ListWatch`: it relists (objects missing from the new list get
 *   delete callbacks; unchanged resourceVersions get no callback) or re-watches. Nothing to do.
 * - Any other failure (HTTP 500, 403, connection refused or reset) makes `ListWatch` emit
 *   `error` and stop for good. This class restarts it with backoff (`restartBackoff`, reset once
 *   a watch is established again) and tells its owner (`failed`). Cached objects stay: a failing
 *   API server never looks like "everything was deleted".
 * - `ListWatch.stop()` itself emits `error` (an AbortError), and a reconnect delay that ends
 *   after stop would open a new watch; the `stopping` flag and the watch hook below make stop
 *   final.
 * - The `Watch` it uses is a subclass that only observes: it tells this class when a watch is
 *   about to start (the list before it has been applied: that is "listed") and when its
 *   response arrived (the watch is established), and asks for bookmarks.
 *
 * Objects are kept in this class's own map ({@link objects}), fed by the `ListWatch` callbacks,
 * so that {@link relist} can swap in a fresh `ListWatch` and still report deletions.
 *
 * client-node arrives as a parameter (`clientNode`), see client-node.ts.
 */
import type { KubeConfig, KubernetesListObject, KubernetesObject, ListWatch } from '@kubernetes/client-node';
import type { Clock, TimerHandle } from '../clock/clock.ts';
import type { Backoff } from './backoff.ts';
import { nextBackoffMs } from './backoff.ts';
import type { ClientNode } from './client-node.ts';

/** What the informer was doing when it failed. */
export type InformerPhase = 'list' | 'watch';

/** The owner's callbacks. None may throw; none is called after {@link RestartingInformer.stop}. */
export interface RestartingInformerHandlers<T> {
  /** An object appeared or got a new resourceVersion. */
  upsert(object: T): void;
  /** An object is gone (deleted, or missing from a relist). */
  remove(object: T): void;
  /** The first list was applied (called once; {@link RestartingInformer.hasListed} is true now). */
  listed(): void;
  /** A watch got its 200 response: the API works (again). */
  established(): void;
  /** A list or watch failed; the informer restarts after `retryInMs`, keeping its objects. */
  failed(err: unknown, phase: InformerPhase, retryInMs: number): void;
}

export interface RestartingInformerOptions<T extends KubernetesObject> {
  clientNode: Pick<ClientNode, 'ListWatch' | 'Watch'>;
  kubeConfig: KubeConfig;
  clock: Pick<Clock, 'setTimeout' | 'clearTimeout'>;
  /** The collection path, e.g. `/api/v1/pods` or `/api/v1/namespaces/ns/pods`. */
  path: string;
  fieldSelector?: string | undefined;
  labelSelector?: string | undefined;
  /** The LIST call; must apply the same selectors. */
  list: () => Promise<KubernetesListObject<T>>;
  restartBackoff: Backoff;
  handlers: RestartingInformerHandlers<T>;
}

/** Hooks of the observed watch into its informer. */
interface WatchHooks {
  /** False once the informer is stopping (or the ListWatch was replaced): no new watch then. */
  mayWatch(): boolean;
  /** A watch is about to start: the list before it has been applied. */
  watching(): void;
  /** The watch got its response headers with status 200. */
  established(): void;
}

type WatchClass = ClientNode['Watch'];
type WatchArgs = Parameters<InstanceType<WatchClass>['watch']>;

/**
 * A client-node `Watch` that reports when watches start and succeed. It does not change what
 * goes over the wire except adding `allowWatchBookmarks=true`, which real API servers honour
 * (bookmarks keep the resourceVersion fresh, so a reconnect needs a relist less often).
 */
function observedWatch(Watch: WatchClass, kubeConfig: KubeConfig, hooks: WatchHooks): InstanceType<WatchClass> {
  class ObservedWatch extends Watch {
    override async watch(...args: WatchArgs): Promise<AbortController> {
      const [path, queryParams, callback, done] = args;
      if (!hooks.mayWatch()) return new AbortController();
      hooks.watching();
      let failed = false;
      const observedDone = (err: unknown): void => {
        if (err !== null && err !== undefined) failed = true;
        done(err);
      };
      let controller: AbortController;
      try {
        controller = await super.watch(path, { ...queryParams, allowWatchBookmarks: true }, callback, observedDone);
      } catch (err) {
        // Thrown before the request (e.g. credentials could not be read): report it the way a
        // failed request is reported, so ListWatch does not reject into nowhere.
        observedDone(err);
        return new AbortController();
      }
      if (!hooks.mayWatch()) controller.abort();
      else if (!failed) hooks.established();
      return controller;
    }
  }
  return new ObservedWatch(kubeConfig);
}

export class RestartingInformer<T extends KubernetesObject> {
  private readonly options: RestartingInformerOptions<T>;
  private listWatch: ListWatch<T>;
  private readonly objectMap = new Map<string, T>();
  private stopping = false;
  private listed = false;
  private backoffMs = 0;
  private restartTimer: TimerHandle | undefined;
  /** Reconnect delays of ListWatch in progress; released at stop so nothing waits on a timer. */
  private readonly delays = new Set<{ handle: TimerHandle; resolve: () => void }>();
  /** The next list applied by the current ListWatch replaces the whole map (after relist()). */
  private replaceOnList = false;
  private phase: InformerPhase = 'list';

  constructor(options: RestartingInformerOptions<T>) {
    this.options = options;
    this.listWatch = this.createListWatch();
  }

  /** True once a list has been applied (and stays true). */
  hasListed(): boolean {
    return this.listed;
  }

  /** The cached objects (kept across failures). */
  objects(): T[] {
    return [...this.objectMap.values()];
  }

  /** Starts listing and watching; resolves after the first attempt (successful or not). */
  async start(): Promise<void> {
    await this.run(this.listWatch);
  }

  /** Stops for good: no callbacks, restarts or watches afterwards. Idempotent. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.restartTimer !== undefined) this.options.clock.clearTimeout(this.restartTimer);
    this.restartTimer = undefined;
    for (const delay of this.delays) {
      this.options.clock.clearTimeout(delay.handle);
      delay.resolve();
    }
    this.delays.clear();
    await this.listWatch.stop();
  }

  /**
   * Lists again from scratch with a fresh `ListWatch` (a forced resync): objects missing from the
   * new list are removed, unchanged ones produce no callback. Resolves after the first attempt.
   */
  async relist(): Promise<void> {
    if (this.stopping) return;
    if (this.restartTimer !== undefined) this.options.clock.clearTimeout(this.restartTimer);
    this.restartTimer = undefined;
    const previous = this.listWatch;
    this.listWatch = this.createListWatch();
    this.replaceOnList = true;
    await previous.stop();
    await this.run(this.listWatch);
  }

  // -------------------------------------------------------------------------------------------

  private createListWatch(): ListWatch<T> {
    const { clientNode, kubeConfig, path, labelSelector, fieldSelector } = this.options;
    const current = (): boolean => !this.stopping && this.listWatch === listWatch;
    const watch = observedWatch(clientNode.Watch, kubeConfig, {
      mayWatch: current,
      watching: () => {
        if (current()) this.onWatching(listWatch);
      },
      established: () => {
        if (current()) this.onEstablished();
      },
    });
    const list = async (): Promise<KubernetesListObject<T>> => {
      this.phase = 'list';
      return this.options.list();
    };
    const listWatch: ListWatch<T> = new clientNode.ListWatch<T>(path, watch, list, false, labelSelector, fieldSelector, {
      delayFn: (ms) => this.delay(ms),
    });
    listWatch.on('add', (object) => {
      if (current()) this.upsert(object);
    });
    listWatch.on('update', (object) => {
      if (current()) this.upsert(object);
    });
    listWatch.on('delete', (object) => {
      if (current()) this.remove(object);
    });
    listWatch.on('error', (err: unknown) => {
      if (current()) this.onError(listWatch, err);
    });
    return listWatch;
  }

  private async run(listWatch: ListWatch<T>): Promise<void> {
    try {
      await listWatch.start();
    } catch (err) {
      if (!this.stopping && this.listWatch === listWatch) this.onError(listWatch, err);
    }
  }

  private delay(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      if (this.stopping) {
        resolve();
        return;
      }
      const entry = {
        handle: this.options.clock.setTimeout(() => {
          this.delays.delete(entry);
          resolve();
        }, ms),
        resolve,
      };
      this.delays.add(entry);
    });
  }

  private upsert(object: T): void {
    this.objectMap.set(objectKey(object), object);
    this.options.handlers.upsert(object);
  }

  private remove(object: T): void {
    if (!this.objectMap.delete(objectKey(object))) return;
    this.options.handlers.remove(object);
  }

  /** A watch is about to start: the list before it (if any) has been applied. */
  private onWatching(listWatch: ListWatch<T>): void {
    this.phase = 'watch';
    if (this.replaceOnList) {
      this.replaceOnList = false;
      const present = new Set(listWatch.list().map(objectKey));
      for (const [key, object] of [...this.objectMap]) {
        if (present.has(key)) continue;
        this.objectMap.delete(key);
        this.options.handlers.remove(object);
      }
    }
    if (!this.listed) {
      this.listed = true;
      this.options.handlers.listed();
    }
  }

  private onEstablished(): void {
    this.backoffMs = 0;
    this.options.handlers.established();
  }

  private onError(listWatch: ListWatch<T>, err: unknown): void {
    this.backoffMs = nextBackoffMs(this.options.restartBackoff, this.backoffMs);
    if (this.restartTimer !== undefined) this.options.clock.clearTimeout(this.restartTimer);
    this.restartTimer = this.options.clock.setTimeout(() => {
      this.restartTimer = undefined;
      if (!this.stopping && this.listWatch === listWatch) void this.run(listWatch);
    }, this.backoffMs);
    this.options.handlers.failed(err, this.phase, this.backoffMs);
  }
}

function objectKey(object: KubernetesObject): string {
  return `${object.metadata?.namespace ?? ''}/${object.metadata?.name ?? ''}`;
}
