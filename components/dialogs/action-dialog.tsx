'use client';

import { useMutation } from '@tanstack/react-query';
import { agentActionMutationOptions, withActionNote, type ActionRequest, type ActionResult } from '../../lib/dashboard/actions-client.ts';
import { formatDuration } from '../../lib/dashboard/time-format.ts';
import { ActionError } from './action-error.tsx';
import { ChecksList } from './checks-list.tsx';
import { ConfirmDialog } from './confirm-dialog.tsx';
import { RetryProgress } from './retry-progress.tsx';
import type { Operation } from '../../lib/api/index.ts';

/** An action waiting for confirmation: what the dialog says and what it sends. */
export interface PendingAction {
  readonly title: string;
  /** Exactly what will happen, shown verbatim. */
  readonly description: string;
  readonly confirmLabel: string;
  readonly request: ActionRequest;
  /** Retry now: the operation as the dialog showed it; after the retry the dialog follows it live. */
  readonly operation?: Operation;
}

function ResultView({ agent, result, operation }: { agent: string; result: ActionResult; operation: Operation | undefined }) {
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
          {operation === undefined ? null : <RetryProgress agent={agent} before={operation} />}
        </div>
      );
    case 'unmount': {
      const r = result.response;
      if ('status' in r) {
        return (
          <div className="result" role="status">
            <p>
              <span aria-hidden="true">… </span>
              TearDown started and still running (<code>{r.operation}</code>): its outcome will show in the operations table and the audit log.
            </p>
            <ChecksList checks={r.checks} />
          </div>
        );
      }
      return (
        <div className={`result ${r.outcome === 'unmounted' ? 'result--ok' : 'result--bad'}`} role="status">
          <p>
            <span aria-hidden="true">{r.outcome === 'unmounted' ? '✓ ' : r.outcome === 'uncertain' ? '? ' : '✕ '}</span>
            Outcome: <strong>{r.outcome}</strong>
            {r.outcome === 'uncertain' ? ' (TearDown timed out; the mount is uncertain and the reconciler retries)' : ''}
            {r.error !== null ? `: ${r.error}` : ''}
          </p>
          <ChecksList checks={r.checks} />
        </div>
      );
    }
  }
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
      renderResult={(result) => <ResultView agent={agent} result={result} operation={pending?.operation} />}
      renderError={(error) => <ActionError error={error} failedHeading="The action failed" refusedHeading="The agent refused (409)" />}
      onClose={onClose}
      withNote={withActionNote}
    />
  );
}
