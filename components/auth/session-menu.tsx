'use client';

import { useQuery } from '@tanstack/react-query';
import { z } from 'zod';
import { REQUEST_HEADER, REQUEST_HEADER_VALUE } from '../../lib/dashboard/auth/request-guard.ts';

const SessionInfoSchema = z.object({
  session: z.object({ kind: z.enum(['local', 'token', 'oidc']), username: z.string(), groups: z.array(z.string()), expiresAt: z.number() }).nullable(),
});

/** Who is logged in (never the token: the server does not send it), and Log out. */
export function SessionMenu() {
  const { data } = useQuery({
    queryKey: ['auth-session'],
    queryFn: async ({ signal }) => SessionInfoSchema.parse(await (await fetch('/api/auth/session', { signal, cache: 'no-store' })).json()),
    staleTime: 60_000,
  });
  const session = data?.session;
  if (session === undefined || session === null) return null;
  if (session.kind === 'local') return <span className="session-menu muted">Local demo session</span>;
  return (
    <span className="session-menu">
      <span>
        Logged in as <strong>{session.username}</strong>
      </span>
      <button
        type="button"
        className="button button--small"
        onClick={() => {
          void fetch('/api/auth/logout', { method: 'POST', headers: { [REQUEST_HEADER]: REQUEST_HEADER_VALUE }, cache: 'no-store' }).then(() => {
            window.location.assign('/login');
          });
        }}
      >
        Log out
      </button>
    </span>
  );
}
