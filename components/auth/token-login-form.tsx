'use client';

import { useState } from 'react';
import { z } from 'zod';
import { REQUEST_HEADER, REQUEST_HEADER_VALUE } from '../../lib/dashboard/auth/request-guard.ts';

const LoginErrorSchema = z.object({ error: z.object({ message: z.string() }) });

/** Paste a Kubernetes bearer token; the server reviews it and sets the session cookie. */
export function TokenLoginForm({ next }: { next: string }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [pending, setPending] = useState(false);
  return (
    <form
      onSubmit={(e) => {
        e.preventDefault();
        setPending(true);
        setError(null);
        fetch('/api/auth/login', {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', [REQUEST_HEADER]: REQUEST_HEADER_VALUE },
          body: JSON.stringify({ token }),
          cache: 'no-store',
        })
          .then(async (response) => {
            if (response.ok) {
              window.location.assign(next);
              return;
            }
            const body = LoginErrorSchema.safeParse(await response.json().catch(() => null));
            setError(body.success ? body.data.error.message : `login failed (HTTP ${response.status})`);
            setPending(false);
          })
          .catch((err: unknown) => {
            setError(`the dashboard did not answer: ${err instanceof Error ? err.message : String(err)}`);
            setPending(false);
          });
      }}
    >
      <label htmlFor="token">Kubernetes bearer token</label>
      <textarea id="token" name="token" autoComplete="off" spellCheck={false} value={token} onChange={(e) => {
          setToken(e.target.value);
        }} required />
      <p className="muted">For example <code>kubectl create token NAME -n NAMESPACE</code>. The token stays on the dashboard server, sealed in your session cookie.</p>
      <button type="submit" className="button button--primary" disabled={pending}>
        {pending ? 'Logging in…' : 'Log in with token'}
      </button>
      {error !== null ? (
        <p role="alert" className="error-block">
          {error}
        </p>
      ) : null}
    </form>
  );
}
