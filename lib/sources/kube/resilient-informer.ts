/**
 * ResilientInformer: the API source's informer, a {@link RestartingInformer} (restart with
 * backoff, stop is final, relist; see lib/kube-client/restarting-informer.ts) that keeps its
 * current failure as a message (`error()`, the `message` of the source's error about
 * {@link ResilientInformer.target}) and logs failures and recoveries.
 */
import { ListWatch, Watch } from '@kubernetes/client-node';
import type { KubeConfig, KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import type { Clock } from '../../clock/clock.ts';
import { describeApiError } from '../../kube-client/api-errors.ts';
import type { Backoff } from '../../kube-client/backoff.ts';
import { RestartingInformer } from '../../kube-client/restarting-informer.ts';
import type { InformerPhase } from '../../kube-client/restarting-informer.ts';
import type { Logger } from '../../volume/logger.ts';

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
  logger: Logger;
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
  private readonly informer: RestartingInformer<T>;
  private lastError: string | undefined;

  constructor(options: ResilientInformerOptions<T>) {
    const { description, logger, handlers } = options;
    this.target = options.fieldSelector === undefined ? options.path : `${options.path}?fieldSelector=${options.fieldSelector}`;
    this.informer = new RestartingInformer<T>({
      clientNode: { ListWatch, Watch },
      kubeConfig: options.kubeConfig,
      clock: options.clock,
      path: options.path,
      fieldSelector: options.fieldSelector,
      list: options.list,
      restartBackoff: options.restartBackoff,
      handlers: {
        upsert: (object) => {
          handlers.upsert(object);
        },
        remove: (object) => {
          handlers.remove(object);
        },
        listed: () => {
          handlers.stateChanged();
        },
        established: () => {
          if (this.lastError === undefined) return;
          logger.info(`${description}: watching again`, { informer: this.target });
          this.lastError = undefined;
          handlers.stateChanged();
        },
        failed: (err: unknown, phase: InformerPhase, retryInMs: number) => {
          const info = describeApiError(err);
          const message = `${description}: ${phase} failed: ${info.message} (keeping the cached objects; retrying)`;
          logger.warn(`${description}: ${phase} failed`, { informer: this.target, error: info.message, retryInMs });
          if (message === this.lastError) return;
          this.lastError = message;
          handlers.stateChanged();
        },
      },
    });
  }

  /** True once a list has been applied (and stays true). */
  hasListed(): boolean {
    return this.informer.hasListed();
  }

  /** The current failure (`pods on node a: watch failed: HTTP 500 …`), or undefined while healthy. */
  error(): string | undefined {
    return this.lastError;
  }

  /** The cached objects. */
  objects(): T[] {
    return this.informer.objects();
  }

  /** Starts listing and watching; resolves after the first attempt (successful or not). */
  start(): Promise<void> {
    return this.informer.start();
  }

  /** Stops for good: no callbacks, restarts or watches afterwards. Idempotent. */
  stop(): Promise<void> {
    return this.informer.stop();
  }

  /** Lists again from scratch (a forced resync); resolves after the first attempt. */
  relist(): Promise<void> {
    return this.informer.relist();
  }
}
