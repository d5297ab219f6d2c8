/**
 * The query client: a new one per server request, one per browser tab (TanStack's App Router
 * pattern). Agent data never refetches by itself; it is pushed by the stream.
 */
import { QueryClient, environmentManager } from '@tanstack/react-query';
import { isAgentApiError } from '../api/index.ts';
import { isAgentUnavailableError } from './dashboard-error.ts';

function makeQueryClient(): QueryClient {
  return new QueryClient({
    defaultOptions: {
      queries: {
        staleTime: Number.POSITIVE_INFINITY,
        refetchOnWindowFocus: false,
        // Never retry what retrying cannot fix (4xx, a known-unavailable agent); else up to twice.
        retry: (failures, error) => !(isAgentUnavailableError(error) || (isAgentApiError(error) && error.status < 500)) && failures < 2,
      },
      mutations: { retry: false },
    },
  });
}

let browserClient: QueryClient | undefined;

/** The query client for this render: per request on the server, a singleton in the browser. */
export function getQueryClient(): QueryClient {
  if (environmentManager.isServer()) return makeQueryClient();
  browserClient ??= makeQueryClient();
  return browserClient;
}
