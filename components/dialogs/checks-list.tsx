import type { Check } from '../../lib/api/index.ts';
import { checkQuestion } from '../../lib/dashboard/check-questions.ts';
import { failedChecks } from '../../lib/dashboard/observe-view.ts';

export interface ChecksListProps {
  /** The agent's safety checks of an action, in the agent's order; none renders nothing. */
  readonly checks: readonly Check[];
  /**
   * Group by outcome: the failed checks listed under "Failed checks (n)", the passed ones behind a
   * "Passed checks (n)" disclosure (for a refusal, where the failed ones are the news). Default:
   * one list in the agent's order.
   */
  readonly grouped?: boolean;
}

/** An action's checks, each as icon + outcome (for screen readers) + question and answer + the agent's detail and check name. */
export function ChecksList({ checks, grouped = false }: ChecksListProps) {
  if (checks.length === 0) return null;
  if (!grouped) {
    return (
      <ul className="checks">
        {checks.map((c) => {
          const q = checkQuestion(c);
          return (
            <li key={c.name} className={c.ok ? 'checks__ok' : 'checks__failed'}>
              <span aria-hidden="true">{c.ok ? '✓ ' : '✕ '}</span>
              <span className="visually-hidden">{c.ok ? 'passed: ' : 'failed: '}</span>
              {q.question} <strong>{q.answer}</strong>
              {q.detail === null ? null : <> — {q.detail}</>} <code className="muted small">{c.name}</code>
            </li>
          );
        })}
      </ul>
    );
  }
  const failed = failedChecks(checks);
  const passed = checks.filter((c) => c.ok);
  return (
    <>
      {failed.length > 0 ? (
        <p>
          <strong>Failed checks ({failed.length}):</strong>
        </p>
      ) : null}
      <ChecksList checks={failed} />
      {passed.length > 0 ? (
        <details>
          <summary>Passed checks ({passed.length})</summary>
          <ChecksList checks={passed} />
        </details>
      ) : null}
    </>
  );
}
