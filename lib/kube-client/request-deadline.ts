/**
 * Deadlines for single API requests (LISTs and GETs). client-node's typed calls have no timeout
 * of their own: against an API server that accepts the connection and never answers, a LIST
 * would wait forever and its informer would neither fail nor retry. Each request therefore gets
 * an AbortSignal (through a request middleware: `RequestContext.setSignal`), aborted when the
 * deadline on the injected Clock passes or when the owner stops.
 */
import { Observable } from '@kubernetes/client-node';
import type { ConfigurationOptions, RequestContext, ResponseContext } from '@kubernetes/client-node';
import type { Clock } from '../../clock/clock.ts';
import { KubeApiRequestError } from './errors.ts';

/** Per-call options that make client-node's fetch use `signal`. */
export function abortableRequestOptions(signal: AbortSignal): ConfigurationOptions {
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

/**
 * Tracks requests in flight: each runs with a signal that aborts after `timeoutMs` (the request
 * then rejects with a {@link KubeApiRequestError} saying so) or on {@link abortAll}.
 */
export class RequestDeadlines {
  private readonly clock: Clock;
  private readonly timeoutMs: number;
  private readonly inFlight = new Set<AbortController>();

  constructor(clock: Clock, timeoutMs: number) {
    this.clock = clock;
    this.timeoutMs = timeoutMs;
  }

  async run<T>(what: string, request: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const controller = new AbortController();
    this.inFlight.add(controller);
    const timer = this.clock.setTimeout(() => {
      controller.abort(new KubeApiRequestError(`${what} timed out after ${this.timeoutMs} ms`, undefined, undefined));
    }, this.timeoutMs);
    try {
      return await request(controller.signal);
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
