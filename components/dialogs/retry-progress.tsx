'use client';

import { useEffect, useState } from 'react';
import type { Operation } from '../../lib/api/index.ts';
import { appendFollowUp, retryFollowUp, type RetryFollowUp } from '../../lib/dashboard/retry-follow-up.ts';
import { useAgentSnapshot } from '../../lib/dashboard/use-agent.ts';
import { ErrorCauseText } from '../shared/error-cause.tsx';
import { OperationCountdown } from '../shared/time-text.tsx';

function Step({ step }: { step: RetryFollowUp }) {
  switch (step.kind) {
    case 'waiting':
      return (
        <>
          <span aria-hidden="true">… </span>waiting for the reconciler’s next pass
        </>
      );
    case 'retrying':
      return (
        <>
          <span aria-hidden="true">↻ </span>retrying
        </>
      );
    case 'failed-again':
      return (
        <span className="text-bad">
          <span aria-hidden="true">✕ </span>
          {step.sameError ? 'failed again with the same error' : (
            <>
              failed again: <ErrorCauseText message={step.op.lastError ?? ''} />
            </>
          )}
          , next <OperationCountdown op={step.op} />
        </span>
      );
    case 'succeeded':
      return (
        <span className="text-good">
          {step.text} <span aria-hidden="true">✓</span>
        </span>
      );
  }
}

/**
 * What happened after a Retry now, step by step ("retrying → failed again with the same error,
 * next retry in 0:01 → retrying → mounted ✓"). One polite live region: each new step is read.
 */
export function RetryProgressView({ steps }: { steps: readonly RetryFollowUp[] }) {
  return (
    <p className="retry-progress" role="status" aria-live="polite">
      <span className="visually-hidden">After the retry: </span>
      {steps.map((step, i) => (
        <span key={i}>
          {i > 0 ? <span aria-hidden="true"> → </span> : null}
          <Step step={step} />
        </span>
      ))}
    </p>
  );
}

/** {@link RetryProgressView} of `before` followed live through the agent's snapshot. */
export function RetryProgress({ agent, before }: { agent: string; before: Operation }) {
  const { data } = useAgentSnapshot(agent);
  const [steps, setSteps] = useState<readonly RetryFollowUp[]>([]);
  useEffect(() => {
    if (data === undefined) return;
    const next = retryFollowUp(before, data);
    setSteps((prev) => appendFollowUp(prev, next));
  }, [data, before]);
  return <RetryProgressView steps={steps} />;
}
