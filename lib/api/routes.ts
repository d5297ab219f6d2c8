/** The agent's HTTP routes, for the server's router and for clients building URLs. */

/** One route: method, path, and whether it needs `Authorization: Bearer <token>`. */
export interface ApiRoute {
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly auth: boolean;
}

/** Every route of the agent (`GET /api/v1/summary` is `SUMMARY_ROUTE` in summary.ts). */
export const API_ROUTES = {
  healthz: { method: 'GET', path: '/healthz', auth: false },
  readyz: { method: 'GET', path: '/readyz', auth: false },
  snapshot: { method: 'GET', path: '/api/v1/snapshot', auth: true },
  events: { method: 'GET', path: '/api/v1/events', auth: true },
  resync: { method: 'POST', path: '/api/v1/resync', auth: true },
  retryOperation: { method: 'POST', path: '/api/v1/operations/retry', auth: true },
  unmount: { method: 'POST', path: '/api/v1/unmount', auth: true },
  orphanCleanup: { method: 'POST', path: '/api/v1/orphans/cleanup', auth: true },
  /** Who keeps a volume's path busy (`?volume=<unique name>&podUid=<uid>`; lib/api/mount-health.ts). */
  volumeBlockers: { method: 'GET', path: '/api/v1/volumes/blockers', auth: true },
  /** The OpenAPI 3.1 document of this API (lib/api/openapi.ts; also docs/openapi.json). */
  openapi: { method: 'GET', path: '/api/v1/openapi.json', auth: true },
  /** Prometheus text exposition of the agent's metrics. */
  metrics: { method: 'GET', path: '/metrics', auth: true },
} as const satisfies Record<string, ApiRoute>;

/** The name of a route in {@link API_ROUTES}. */
export type ApiRouteName = keyof typeof API_ROUTES;
