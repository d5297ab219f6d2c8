import type { Check } from '../../lib/api/index.ts';
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

/** An action's checks, each as icon + outcome (for screen readers) + name + the agent's detail. */
export function ChecksList({ checks, grouped = false }: ChecksListProps) {
  if (checks.length === 0) return null;
  if (!grouped) {
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
