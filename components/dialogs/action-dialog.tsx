'use client';

import { useMutation } from '@tanstack/react-query';
import { useId } from 'react';
import { isAgentApiError, type Check } from '../../lib/api/index.ts';
import type { ActionAvailability } from '../../lib/dashboard/action-guards.ts';
import { agentActionMutationOptions, type ActionRequest, type ActionResult } from '../../lib/dashboard/actions-client.ts';
import { isAgentUnavailableError } from '../../lib/dashboard/dashboard-error.ts';
import { formatDuration } from '../../lib/dashboard/time-format.ts';
import { ConfirmDialog } from './confirm-dialog.tsx';

/** An action waiting for confirmation: what the dialog says and what it sends. */
export interface PendingAction {
  readonly title: string;
  /** Exactly what will happen, shown verbatim. */
  readonly description: string;
  readonly confirmLabel: string;
  readonly request: ActionRequest;
}

/**
 * A button for an action. When not allowed it stays focusable but inert (`aria-disabled`), and
 * the reason is shown next to it and read with it.
 */
export function ActionButton({ label, availability, onClick, small = false }: { label: string; availability: ActionAvailability; onClick: () => void; small?: boolean }) {
  const reasonId = useId();
  const allowed = availability.allowed;
  return (
    <span className="action">
      <button
        type="button"
        className={`button button--action${small ? ' button--small' : ''}`}
        aria-disabled={!allowed}
        aria-describedby={allowed ? undefined : reasonId}
        onClick={() => {
          if (allowed) onClick();
        }}
      >
        {label}
      </button>
      {!availability.allowed ? (
        <span id={reasonId} className="action__reason">
          {small ? <span className="visually-hidden">{`Not available: ${availability.reason}`}</span> : `Not available: ${availability.reason}`}
        </span>
      ) : null}
    </span>
  );
}

function Checks({ checks }: { checks: readonly Check[] }) {
  if (checks.length === 0) return null;
  return (
    <ul className="checks">
      {checks.map((c) => (
        <li key={c.name} className={c.ok ? 'checks__ok' : 'checks__failed'}>
          <span aria-hidden="true">{c.ok ? '✓ ' : '✕ '}</span>
          <span className="visually-hidden">{c.ok ? 'passed: ' : 'failed: '}</span>
          <code>{c.name}</code> — {c.detail}
        </li>
      ))}
    </ul>
  );
}

function ResultView({ result }: { result: ActionResult }) {
  switch (result.kind) {
    case 'resync': {
      const r = result.response;
      return (
        <div className="result result--ok" role="status">
          <p>
            <span aria-hidden="true">✓ </span>Resync done in {formatDuration(r.finishedAt - r.startedAt)}: rescanned {r.rescanned.volumes} volume directories and{' '}
            {r.rescanned.mountPoints} mount points; checked {r.attachVerification.checked} attached volumes
            {r.attachVerification.foundDetached.length > 0 ? `, found detached: ${r.attachVerification.foundDetached.join(', ')}` : ''}.
          </p>
          {r.changes.length === 0 ? <p>No changes: everything matched.</p> : (
            <ul>
              {r.changes.map((c) => (
                <li key={c}>{c}</li>
              ))}
            </ul>
          )}
        </div>
      );
    }
    case 'retry':
      return (
        <div className="result result--ok" role="status">
          <p>
            <span aria-hidden="true">✓ </span>Backoff cleared for <code>{result.response.cleared}</code>. The reconciler retries it on its next pass.
          </p>
        </div>
      );
    case 'unmount': {
      const r = result.response;
      return (
        <div className={`result ${r.outcome === 'unmounted' ? 'result--ok' : 'result--bad'}`} role="status">
          <p>
            <span aria-hidden="true">{r.outcome === 'unmounted' ? '✓ ' : r.outcome === 'uncertain' ? '? ' : '✕ '}</span>
            Outcome: <strong>{r.outcome}</strong>
            {r.outcome === 'uncertain' ? ' (TearDown timed out; the mount is uncertain and the reconciler retries)' : ''}
            {r.error !== null ? `: ${r.error}` : ''}
          </p>
          <Checks checks={r.checks} />
        </div>
      );
    }
  }
}

function ErrorView({ error }: { error: Error }) {
  let heading = 'The action failed';
  let checks: Check[] = [];
  if (isAgentApiError(error)) {
    heading = error.status === 409 ? 'The agent refused (409)' : `The agent answered ${error.status}${error.code !== null ? ` ${error.code}` : ''}`;
    checks = error.checks;
  } else if (isAgentUnavailableError(error)) {
    heading = 'The dashboard could not reach the agent';
  }
  return (
    <div className="result result--bad" role="alert">
      <p>
        <span aria-hidden="true">✕ </span>
        <strong>{heading}:</strong> {error.message}
      </p>
      <Checks checks={checks} />
    </div>
  );
}

/**
 * The confirmation dialog of an action: says exactly what will happen, runs the mutation on
 * confirm, and shows the agent's answer (its result, or its refusal with the checks). The
 * action then shows up in the node's audit log through the live stream.
 */
export function ActionDialog({ agent, pending, onClose }: { agent: string; pending: PendingAction | null; onClose: () => void }) {
  const mutation = useMutation(agentActionMutationOptions(agent));
  return (
    <ConfirmDialog
      content={pending === null ? null : { title: pending.title, description: pending.description, confirmLabel: pending.confirmLabel, variables: pending.request }}
      mutation={mutation}
      renderResult={(result) => <ResultView result={result} />}
      renderError={(error) => <ErrorView error={error} />}
      onClose={onClose}
    />
  );
}
