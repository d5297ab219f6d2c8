/** The agent's HTTP routes, for the server's router and for clients building URLs. */

/** One route: method, path, and whether it needs `Authorization: Bearer <token>`. */
export interface ApiRoute {
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly auth: boolean;
}

/** Every route of the agent. */
export const API_ROUTES = {
  healthz: { method: 'GET', path: '/healthz', auth: false },
  readyz: { method: 'GET', path: '/readyz', auth: false },
  snapshot: { method: 'GET', path: '/api/v1/snapshot', auth: true },
  events: { method: 'GET', path: '/api/v1/events', auth: true },
  resync: { method: 'POST', path: '/api/v1/resync', auth: true },
  retryOperation: { method: 'POST', path: '/api/v1/operations/retry', auth: true },
  unmount: { method: 'POST', path: '/api/v1/unmount', auth: true },
  orphanCleanup: { method: 'POST', path: '/api/v1/orphans/cleanup', auth: true },
} as const satisfies Record<string, ApiRoute>;

/** The name of a route in {@link API_ROUTES}. */
export type ApiRouteName = keyof typeof API_ROUTES;
