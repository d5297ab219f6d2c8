/**
 * ResilientInformer: one `ListWatch` of `@kubernetes/client-node` (list, then watch from the
 * list's resourceVersion), kept running for the life of the source.
 *
 * What client-node 2.0.1 does by itself, and what this adds:
 * - 410 Gone (a watch `ERROR` event with code 410, or an HTTP 410 answer) and clean closes by
 *   the server are handled by `ListWatch`: it relists (objects missing from the new list get
 *   delete callbacks; unchanged resourceVersions get no callback) or re-watches. Nothing to do.
 * - Any other failure (HTTP 500, 403, connection refused or reset) makes `ListWatch` emit
 *   `error` and stop for good. This class restarts it with backoff (`restartBackoff`, reset once a
 *   watch is established again), and reports the failure as the informer's {@link error} until
 *   then. Cached objects stay: a failing API server never looks like "everything was deleted".
 * - `ListWatch.stop()` itself emits `error` (an AbortError), and a reconnect delay that ends
 *   after stop would open a new watch; the `stopping` flag and the watch hook below make stop
 *   final.
 * - The `Watch` it uses is a subclass that only observes: it tells this class when a watch is
 *   about to start (the list before it has been applied: that is "listed") and when its
 *   response arrived (the watch is established), and asks for bookmarks.
 *
 * Objects are kept in this class's own map (`objects()`), fed by the `ListWatch` callbacks, so
 * that {@link relist} can swap in a fresh `ListWatch` and still report deletions.
 */
import { ListWatch, Watch } from '@kubernetes/client-node';
import type { KubeConfig, KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import type { Clock, TimerHandle } from '../../clock/clock.ts';
import type { SourceLogger } from '../manifest/index.ts';
import { describeApiError } from './api-error.ts';
import type { Backoff } from './backoff.ts';
import { nextBackoffMs } from './backoff.ts';

export interface InformerHandlers<T> {
  /** An object appeared or got a new resourceVersion. Must not throw. */
  upsert(object: T): void;
  /** An object is gone (deleted, or missing from a relist). Must not throw. */
  remove(object: T): void;
  /** {@link ResilientInformer.hasListed} or {@link ResilientInformer.error} changed. Must not throw. */
  stateChanged(): void;
}

export interface ResilientInformerOptions<T extends KubernetesObject> {
  kubeConfig: KubeConfig;
  clock: Clock;
  logger: SourceLogger;
  /** The collection path, e.g. `/api/v1/pods`. */
  path: string;
  fieldSelector?: string;
  /** The LIST call; must apply the same field selector. */
  list: () => Promise<KubernetesListObject<T>>;
  /** What is watched, for messages: `pods on node node-a`. */
  description: string;
  restartBackoff: Backoff;
  handlers: InformerHandlers<T>;
}

/** Hooks of {@link ObservedWatch} into its informer. */
interface WatchHooks {
  /** False once the informer is stopping: no new watch is opened then. */
  mayWatch(): boolean;
  /** The watch got its response headers with status 200. */
  established(): void;
}

/**
 * A client-node `Watch` that reports when watches start and succeed. It does not change what
 * goes over the wire except adding `allowWatchBookmarks=true`, which real API servers honour
 * (bookmarks keep the resourceVersion fresh, so a reconnect needs a relist less often).
 */
class ObservedWatch extends Watch {
  private readonly hooks: WatchHooks & { watching(): void };

  constructor(kubeConfig: KubeConfig, hooks: WatchHooks & { watching(): void }) {
    super(kubeConfig);
    this.hooks = hooks;
  }

  override async watch(...args: Parameters<Watch['watch']>): Promise<AbortController> {
    const [path, queryParams, callback, done] = args;
    if (!this.hooks.mayWatch()) return new AbortController();
    this.hooks.watching();
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
    if (!this.hooks.mayWatch()) controller.abort();
    else if (!failed) this.hooks.established();
    return controller;
  }
}

/** The kind-independent part of an informer: lifecycle and health. */
export interface InformerControl {
  readonly target: string;
  hasListed(): boolean;
  error(): string | undefined;
  start(): Promise<void>;
  stop(): Promise<void>;
  relist(): Promise<void>;
}

export class ResilientInformer<T extends KubernetesObject> implements InformerControl {
  /** The watched collection with its selector, as the `file` of this informer's source errors. */
  readonly target: string;
  private readonly options: ResilientInformerOptions<T>;
  private listWatch: ListWatch<T>;
  private readonly objectMap = new Map<string, T>();
  private stopping = false;
  private listed = false;
  private lastError: string | undefined;
  private backoffMs = 0;
  private restartTimer: TimerHandle | undefined;
  /** Reconnect delays of ListWatch in progress; released at stop so nothing waits on a timer. */
  private readonly delays = new Set<{ handle: TimerHandle; resolve: () => void }>();
  /** The next list applied by the current ListWatch replaces the whole map (after relist()). */
  private replaceOnList = false;
  private phase: 'list' | 'watch' = 'list';

  constructor(options: ResilientInformerOptions<T>) {
    this.options = options;
    this.target = options.fieldSelector === undefined ? options.path : `${options.path}?fieldSelector=${options.fieldSelector}`;
    this.listWatch = this.createListWatch();
  }

  /** True once a list has been applied (and stays true). */
  hasListed(): boolean {
    return this.listed;
  }

  /** The current failure (`pods on node a: watch failed: HTTP 500 …`), or undefined while healthy. */
  error(): string | undefined {
    return this.lastError;
  }

  /** The cached objects. */
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
    const current = (): boolean => !this.stopping && this.listWatch === listWatch;
    const watch = new ObservedWatch(this.options.kubeConfig, {
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
    const listWatch: ListWatch<T> = new ListWatch<T>(this.options.path, watch, list, false, undefined, this.options.fieldSelector, {
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
      this.options.handlers.stateChanged();
    }
  }

  private onEstablished(): void {
    this.backoffMs = 0;
    if (this.lastError === undefined) return;
    this.options.logger.info({ informer: this.target }, `${this.options.description}: watching again`);
    this.lastError = undefined;
    this.options.handlers.stateChanged();
  }

  private onError(listWatch: ListWatch<T>, err: unknown): void {
    const info = describeApiError(err);
    this.backoffMs = nextBackoffMs(this.options.restartBackoff, this.backoffMs);
    const message = `${this.options.description}: ${this.phase} failed: ${info.message} (keeping the cached objects; retrying)`;
    this.options.logger.warn({ informer: this.target, error: info.message, retryInMs: this.backoffMs }, `${this.options.description}: ${this.phase} failed`);
    if (this.restartTimer !== undefined) this.options.clock.clearTimeout(this.restartTimer);
    this.restartTimer = this.options.clock.setTimeout(() => {
      this.restartTimer = undefined;
      if (!this.stopping && this.listWatch === listWatch) void this.run(listWatch);
    }, this.backoffMs);
    if (message !== this.lastError) {
      this.lastError = message;
      this.options.handlers.stateChanged();
    }
  }
}

function objectKey(object: KubernetesObject): string {
  return `${object.metadata?.namespace ?? ''}/${object.metadata?.name ?? ''}`;
}
