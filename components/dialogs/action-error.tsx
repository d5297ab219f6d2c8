import { isAgentApiError, type Check } from '../../lib/api/index.ts';
import { isAgentUnavailableError } from '../../lib/dashboard/dashboard-error.ts';
import { ChecksList } from './checks-list.tsx';

export interface ActionErrorProps {
  readonly error: Error;
  /** The heading of an error that is neither an agent answer nor an unreachable agent. */
  readonly failedHeading: string;
  /** The heading of the agent's refusal (409). */
  readonly refusedHeading: string;
  /** List a refusal's checks grouped by outcome (see {@link ChecksList}). */
  readonly groupChecks?: boolean;
}

/**
 * Why an action did not happen, as an alert: the agent's refusal (409, with every check), another
 * agent answer (status and code), the dashboard not reaching the agent, or any other failure;
 * always followed by the error's own message.
 */
export function ActionError({ error, failedHeading, refusedHeading, groupChecks = false }: ActionErrorProps) {
  let heading = failedHeading;
  let checks: readonly Check[] = [];
  if (isAgentApiError(error)) {
    heading = error.status === 409 ? refusedHeading : `The agent answered ${error.status}${error.code !== null ? ` ${error.code}` : ''}`;
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
      <ChecksList checks={checks} grouped={groupChecks} />
    </div>
  );
}
