/**
 * Deadlines for single API requests (LISTs, GETs, POSTs, PATCHes). client-node's typed calls
 * have no timeout of their own: against an API server that accepts the connection and never
 * answers, a LIST would wait forever and its informer would neither fail nor retry. Each request
 * therefore gets an AbortSignal (through a request middleware: `RequestContext.setSignal`),
 * aborted when the deadline on the injected clock passes or when the owner stops.
 */
import type { ConfigurationOptions, RequestContext, ResponseContext } from '@kubernetes/client-node';
import type { Clock, TimerHandle } from '../clock/clock.ts';
import type { ClientNode } from './client-node.ts';
import { KubeApiRequestError, KubeRequestTimeoutError } from './api-errors.ts';

/** Per-call options that make client-node's fetch use `signal`. */
export function abortableRequestOptions(clientNode: Pick<ClientNode, 'Observable'>, signal: AbortSignal): ConfigurationOptions {
  const { Observable } = clientNode;
  return {
    middleware: [
      {
        pre: (context: RequestContext) => {
          context.setSignal(signal);
          return new Observable(Promise.resolve(context));
        },
        post: (context: ResponseContext) => new Observable(Promise.resolve(context)),
      },
    ],
    middlewareMergeStrategy: 'append',
  };
}

export interface RequestDeadlinesOptions {
  /** client-node (for its `Observable`, which request middleware must return). */
  readonly clientNode: Pick<ClientNode, 'Observable'>;
  readonly clock: Pick<Clock, 'setTimeout' | 'clearTimeout'>;
  /** How long one request may take. */
  readonly timeoutMs: number;
}

/**
 * Tracks requests in flight: each runs with options whose signal aborts after `timeoutMs` (the
 * request then rejects with a {@link KubeRequestTimeoutError}, `<what> timed out after <n> ms`)
 * or on {@link abortAll}.
 */
export class RequestDeadlines {
  private readonly clientNode: Pick<ClientNode, 'Observable'>;
  private readonly clock: Pick<Clock, 'setTimeout' | 'clearTimeout'>;
  private readonly timeoutMs: number;
  private readonly inFlight = new Set<AbortController>();

  constructor(options: RequestDeadlinesOptions) {
    this.clientNode = options.clientNode;
    this.clock = options.clock;
    this.timeoutMs = options.timeoutMs;
  }

  /** Runs `request` with call options carrying the deadline's signal. */
  async run<T>(what: string, request: (options: ConfigurationOptions, signal: AbortSignal) => Promise<T>): Promise<T> {
    const controller = new AbortController();
    this.inFlight.add(controller);
    const timer: TimerHandle = this.clock.setTimeout(() => {
      controller.abort(new KubeRequestTimeoutError(`${what} timed out after ${this.timeoutMs} ms`));
    }, this.timeoutMs);
    try {
      return await request(abortableRequestOptions(this.clientNode, controller.signal), controller.signal);
    } finally {
      this.clock.clearTimeout(timer);
      this.inFlight.delete(controller);
    }
  }

  /** Aborts every request in flight (at stop: nothing is left waiting on the network). */
  abortAll(): void {
    for (const controller of this.inFlight) controller.abort(new KubeApiRequestError('the API source stopped', undefined, undefined));
    this.inFlight.clear();
  }
}
