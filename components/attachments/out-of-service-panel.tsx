'use client';

import { useQueryClient } from '@tanstack/react-query';
import { useId, useState, type SyntheticEvent } from 'react';
import type { OutOfServiceResponse } from '../../lib/dashboard/attachments/out-of-service.ts';

function outOfServicePath(node: string): string {
  return `/api/attachments/nodes/${encodeURIComponent(node)}/out-of-service`;
}

async function call(node: string, method: 'GET' | 'POST' | 'DELETE', body?: object): Promise<OutOfServiceResponse> {
  const res = await fetch(outOfServicePath(node), {
    method,
    headers: { Accept: 'application/json', ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    cache: 'no-store',
  });
  const json = (await res.json().catch(() => null)) as (OutOfServiceResponse & { error?: string }) | null;
  if (!res.ok || json === null || json.plan === undefined) throw new Error(json?.error ?? `HTTP ${res.status}`);
  return json;
}

/**
 * The guided non-graceful shutdown of one node that is not Ready: what the taint will do (the
 * pods force-deleted, the volumes detached without an unmount), the operator's attestation that
 * the node is off, recorded under the logged-in user. The server re-checks everything (a Ready node is refused).
 */
export function OutOfServicePanel({ node, tainted }: { node: string; tainted: boolean }) {
  const [plan, setPlan] = useState<OutOfServiceResponse['plan'] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [attested, setAttested] = useState(false);
  const [busy, setBusy] = useState(false);
  const queryClient = useQueryClient();
  const id = useId();

  const run = async (fn: () => Promise<OutOfServiceResponse>): Promise<void> => {
    setBusy(true);
    setError(null);
    try {
      setPlan((await fn()).plan);
      await queryClient.invalidateQueries({ queryKey: ['attachments'] });
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  };
  const submit = (e: SyntheticEvent): void => {
    e.preventDefault();
    void run(() => call(node, 'POST', { attestNodeOff: true }));
  };

  if (tainted || plan?.outOfService === true) {
    return (
      <section className="panel" aria-labelledby={`${id}-t`}>
        <h2 id={`${id}-t`}>{node} is marked out of service</h2>
        {plan?.attestedBy !== null && plan?.attestedBy !== undefined ? (
          <p>
            Attested powered off by {plan.attestedBy} at {plan.attestedAt}.
          </p>
        ) : null}
        <p>Remove the taint once the node is back and its old pods are gone.</p>
        <button type="button" disabled={busy} onClick={() => void run(() => call(node, 'DELETE'))}>
          Remove the out-of-service taint from {node}
        </button>
        {error !== null ? <p role="alert">{error}</p> : null}
      </section>
    );
  }
  return (
    <section className="panel" aria-labelledby={`${id}-t`}>
      <h2 id={`${id}-t`}>Mark {node} out of service (non-graceful node shutdown)</h2>
      {plan === null ? (
        <button type="button" disabled={busy} onClick={() => void run(() => call(node, 'GET'))}>
          Show what marking {node} out of service does
        </button>
      ) : (
        <form onSubmit={submit}>
          {plan.refusal !== null ? <p role="alert">Refused: {plan.refusal.message}</p> : null}
          <p>These pods will be force-deleted ({plan.podsToForceDelete.length}):</p>
          <ul>
            {plan.podsToForceDelete.map((p) => (
              <li key={`${p.namespace}/${p.name}`}>
                {p.namespace}/{p.name} ({p.phase}){p.claims.length > 0 ? `, claims ${p.claims.join(', ')}` : ''}
              </li>
            ))}
          </ul>
          <p>The attach/detach controller then detaches {plan.volumesAttached.length} volume(s) from {node} without waiting for an unmount.</p>
          <label>
            <input type="checkbox" checked={attested} onChange={(e) => { setAttested(e.target.checked); }} /> I confirmed out of band (console, cloud API, power
            switch) that {node} is powered off.
          </label>
          <p>The attestation is recorded under your login.</p>
          <button type="submit" disabled={busy || !attested || plan.refusal !== null}>
            Mark {node} out of service
          </button>
        </form>
      )}
      {error !== null ? <p role="alert">{error}</p> : null}
    </section>
  );
}
